import { type ChildProcess, execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { exited, spawnOwned } from './children.js';
import { askOnce } from './one-shot.js';
import { freePort } from './redis.js';

const run = promisify(execFile);

/** A real Redis Cluster on loopback for one test file (or a benchmark). */
export interface TestRedisCluster {
  /** `127.0.0.1:p1,127.0.0.1:p2,…`: the value for LIBOS_REDIS_CLUSTER_NODES. */
  readonly nodes: string;
  /** The masters' client ports. */
  readonly ports: readonly number[];
  /** The redis-server processes' pids (for CPU figures). */
  readonly pids: readonly number[];
  /** The masters' `requirepass` (and `masterauth`) when one was asked for. */
  readonly password?: string;
  stop(): Promise<void>;
}

export interface StartRedisClusterOptions {
  /** Masters, each holding an equal share of the 16384 slots (default 3; at least 1). */
  masters?: number;
  /** Require this password on every node. */
  password?: string;
}

async function ask(port: number, password: string | undefined, ...command: string[]): Promise<string> {
  return String(await askOnce(port, password, ...command));
}

async function until(what: string, deadlineMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`redis cluster: ${what} (last: ${String(last)})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A Redis Cluster of `masters` redis-server processes on free loopback ports (client and cluster
 * bus ports both chosen free), no replicas, no persistence, slots spread by
 * `redis-cli --cluster create`; resolves once every node says `cluster_state:ok` and knows every
 * master. Needs redis-server and redis-cli (7.0+) on PATH.
 */
export async function startRedisCluster(options: StartRedisClusterOptions = {}): Promise<TestRedisCluster> {
  const masters = options.masters ?? 3;
  if (!Number.isInteger(masters) || masters < 1)
    throw new Error(`masters must be a positive integer, not ${masters}`);
  const { password } = options;
  const dir = await mkdtemp(join(tmpdir(), 'libos-redis-cluster-'));
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  const busPorts: number[] = [];
  const stop = async () => {
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(children.map(exited));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const taken = new Set<number>();
    const pick = async () => {
      for (;;) {
        const port = await freePort();
        if (!taken.has(port)) {
          taken.add(port);
          return port;
        }
      }
    };
    for (let i = 0; i < masters; i += 1) {
      const port = await pick();
      const busPort = await pick();
      busPorts.push(busPort);
      ports.push(port);
      const args = [
        '--port',
        String(port),
        '--cluster-port',
        String(busPort),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        // A lone master never learns its own address from a peer: announce it, or CLUSTER SLOTS names none.
        '--cluster-announce-ip',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-node-timeout',
        '5000',
        '--appendonly',
        'no',
        '--save',
        '',
        '--daemonize',
        'no',
        // Test passwords only: on the command line, where `ps` shows it.
        ...(password === undefined ? [] : ['--requirepass', password, '--masterauth', password]),
      ];
      const child = spawnOwned('redis-server', args, { stdio: 'ignore' });
      const failed = await new Promise<Error | undefined>((resolve) => {
        child.once('error', resolve);
        setTimeout(() => resolve(undefined), 50);
      });
      if (failed) throw new Error(`redis cluster: cannot start redis-server (${failed.message})`);
      children.push(child);
    }
    for (const port of ports)
      await until(
        `node ${port} did not answer`,
        10_000,
        async () => (await ask(port, password, 'PING')) === 'PONG',
      );
    const addresses = ports.map((port) => `127.0.0.1:${port}`);
    if (masters < 3) {
      // redis-cli refuses fewer than 3 masters: share the slots out and introduce the nodes by hand.
      for (const [i, port] of ports.entries()) {
        const from = Math.floor((16384 * i) / masters);
        const to = Math.floor((16384 * (i + 1)) / masters) - 1;
        await ask(port, password, 'CLUSTER', 'ADDSLOTSRANGE', String(from), String(to));
        if (i > 0)
          await ask(port, password, 'CLUSTER', 'MEET', '127.0.0.1', String(ports[0]), String(busPorts[0]));
      }
    } else {
      await run(
        'redis-cli',
        [
          ...(password === undefined ? [] : ['--no-auth-warning', '-a', password]),
          '--cluster',
          'create',
          ...addresses,
          '--cluster-replicas',
          '0',
          '--cluster-yes',
        ],
        { timeout: 30_000 },
      );
    }
    for (const port of ports) {
      await until(`node ${port} did not reach cluster_state:ok`, 20_000, async () => {
        const info = await ask(port, password, 'CLUSTER', 'INFO');
        const known = /cluster_known_nodes:(\d+)/.exec(info)?.[1];
        return info.includes('cluster_state:ok') && Number(known) === masters;
      });
    }
    return {
      nodes: addresses.join(','),
      ports,
      pids: children.map((child) => child.pid as number),
      ...(password === undefined ? {} : { password }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
