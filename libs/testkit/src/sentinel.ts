import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { exited, spawnOwned } from './children.js';
import { oneShotClient } from './one-shot.js';
import { freePort, type TestRedis } from './redis.js';

/** A primary, its replicas and the sentinels watching them, each a real redis-server on loopback. */
export interface SentinelGroup extends TestRedis {
  /** The name the sentinels monitor the primary under. */
  readonly master: string;
  /** The sentinels' ports on 127.0.0.1. */
  readonly sentinelPorts: readonly number[];
  /** The data servers' ports (the first started as the primary). */
  readonly serverPorts: readonly number[];
  /** The settings a part needs to reach the group (instead of LIBOS_REDIS_URL). */
  readonly env: Readonly<Record<string, string>>;
  /** The port the sentinels name as the primary now (asks each sentinel until one answers). */
  primaryPort(): Promise<number>;
  /** SIGKILL the data server on `port` (a crash: nothing flushed, no goodbye to the replicas). */
  kill(port: number): Promise<void>;
  /** Start a killed data server again with its own data dir and configuration (so it believes its old role). */
  revive(port: number): Promise<void>;
  /** Resolves once the sentinels name a primary other than `port` and it says it is one. */
  failedOverFrom(port: number, withinMs: number): Promise<number>;
  /** A plain client of one data server (for checks after the fact). */
  client(port: number): Redis;
}

export interface StartSentinelOptions {
  /** Replicas of the primary (default 1). */
  replicas?: number;
  /** Sentinels (default 3, quorum 2). */
  sentinels?: number;
  /** The monitored name (default `libos`). */
  master?: string;
  /** How long a primary may not answer before a sentinel thinks it down (default 1000 ms). */
  downAfterMs?: number;
  /**
   * `min-replicas-to-write` on every data server (default 1 when there is a replica): a primary
   * that lost its replicas, e.g. an old primary coming back before Sentinel demotes it, refuses
   * writes rather than taking ones that a failover will throw away.
   */
  minReplicasToWrite?: number;
  /** `min-replicas-max-lag` in seconds (default 2). */
  minReplicasMaxLag?: number;
  /** The sentinels' own `requirepass` (test passwords only: it is in their config file). */
  sentinelPassword?: string;
}

interface Server {
  port: number;
  dir: string;
  args: string[];
  child: ChildProcess;
}

async function answers(port: number, deadlineMs: number, password?: string): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const client = oneShotClient(port, password);
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') return;
    } catch (error) {
      if (Date.now() > until) throw new Error(`redis on port ${port} did not answer: ${String(error)}`);
    } finally {
      client.disconnect();
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function launch(args: string[]): ChildProcess {
  const child = spawnOwned('redis-server', args, { stdio: 'ignore' });
  child.once('error', () => {});
  return child;
}

/**
 * Starts a Sentinel group on free loopback ports: a primary with AOF (`appendfsync always`), its
 * replicas, and sentinels that fail over after `downAfterMs`. `url` is the first primary's
 * address (a probe for the harness); parts should use `env`. `stop()` ends every server and
 * removes the dirs.
 */
export async function startSentinelGroup(options: StartSentinelOptions = {}): Promise<SentinelGroup> {
  const master = options.master ?? 'libos';
  const replicas = options.replicas ?? 1;
  const sentinelCount = options.sentinels ?? 3;
  const downAfter = options.downAfterMs ?? 1000;
  const minReplicas = options.minReplicasToWrite ?? (replicas > 0 ? 1 : 0);
  const maxLag = options.minReplicasMaxLag ?? 2;
  const root = await mkdtemp(join(tmpdir(), 'libos-sentinel-'));
  const servers = new Map<number, Server>();
  const sentinels: ChildProcess[] = [];
  const sentinelPorts: number[] = [];
  const stopAll = async () => {
    const all = [...[...servers.values()].map((s) => s.child), ...sentinels];
    for (const child of all) child.kill('SIGTERM');
    await Promise.all(all.map(exited));
    await rm(root, { recursive: true, force: true });
  };
  try {
    const ports: number[] = [];
    while (ports.length < replicas + 1) {
      const port = await freePort();
      if (!ports.includes(port)) ports.push(port);
    }
    const primary = ports[0] as number;
    for (const port of ports) {
      const dir = join(root, `redis-${port}`);
      await mkdir(dir);
      // A config file, not only flags: a server's role must survive its restart (a replica that
      // comes back must stay one; a killed primary comes back believing it is still primary).
      const conf = join(dir, 'redis.conf');
      const lines = [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        'save ""',
        'appendonly yes',
        'appendfsync always',
        `min-replicas-to-write ${minReplicas}`,
        `min-replicas-max-lag ${maxLag}`,
        // Redis's own default, said out loud: a replica never takes writes.
        'replica-read-only yes',
      ];
      if (port !== primary) lines.push(`replicaof 127.0.0.1 ${primary}`);
      await writeFile(conf, `${lines.join('\n')}\n`);
      const args = [conf];
      servers.set(port, { port, dir, args, child: launch(args) });
    }
    await Promise.all(ports.map((port) => answers(port, 10_000)));
    // Replicas in sync before the sentinels look: otherwise a sentinel may see none to promote.
    const check = new Redis({ port: primary, host: '127.0.0.1', maxRetriesPerRequest: 1 });
    try {
      const until = Date.now() + 10_000;
      for (;;) {
        const info = await check.info('replication');
        const online = info.split('\n').filter((line) => /^slave\d+:.*state=online/.test(line)).length;
        if (online >= replicas) break;
        if (Date.now() > until) throw new Error(`replicas not in sync: ${info}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      check.disconnect();
    }
    const quorum = Math.floor(sentinelCount / 2) + 1;
    for (let i = 0; i < sentinelCount; i++) {
      let port = await freePort();
      while (ports.includes(port) || sentinelPorts.includes(port)) port = await freePort();
      const dir = join(root, `sentinel-${port}`);
      await mkdir(dir);
      const conf = join(dir, 'sentinel.conf');
      await writeFile(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${master} 127.0.0.1 ${primary} ${quorum}`,
          `sentinel down-after-milliseconds ${master} ${downAfter}`,
          `sentinel failover-timeout ${master} ${Math.max(3000, downAfter * 3)}`,
          `sentinel parallel-syncs ${master} 1`,
          ...(options.sentinelPassword === undefined ? [] : [`requirepass ${options.sentinelPassword}`]),
          '',
        ].join('\n'),
      );
      sentinels.push(launch([conf, '--sentinel']));
      sentinelPorts.push(port);
    }
    await Promise.all(sentinelPorts.map((port) => answers(port, 10_000, options.sentinelPassword)));
  } catch (error) {
    await stopAll();
    throw error;
  }

  const askSentinels = async (): Promise<number | undefined> => {
    for (const port of sentinelPorts) {
      const client = oneShotClient(port, options.sentinelPassword);
      try {
        await client.connect();
        const reply = (await client.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', master)) as
          | [string, string]
          | null;
        if (reply) return Number(reply[1]);
      } catch {
        // the next sentinel
      } finally {
        client.disconnect();
      }
    }
    return undefined;
  };

  const group: SentinelGroup = {
    url: `redis://127.0.0.1:${[...servers.keys()][0]}`,
    dir: root,
    source: 'redis-server',
    master,
    sentinelPorts,
    serverPorts: [...servers.keys()],
    env: {
      LIBOS_REDIS_SENTINELS: sentinelPorts.map((port) => `127.0.0.1:${port}`).join(','),
      LIBOS_REDIS_SENTINEL_MASTER: master,
    },
    async primaryPort() {
      const port = await askSentinels();
      if (port === undefined) throw new Error('no sentinel named a primary');
      return port;
    },
    async kill(port) {
      const server = servers.get(port);
      if (!server) throw new Error(`no server on ${port}`);
      server.child.kill('SIGKILL');
      await exited(server.child);
    },
    async revive(port) {
      const server = servers.get(port);
      if (!server) throw new Error(`no server on ${port}`);
      server.child = launch(server.args);
      await answers(port, 10_000);
    },
    async failedOverFrom(port, withinMs) {
      const until = Date.now() + withinMs;
      for (;;) {
        const now = await askSentinels();
        if (now !== undefined && now !== port) {
          const client = oneShotClient(now);
          try {
            await client.connect();
            const role = (await client.call('ROLE')) as [string, ...unknown[]];
            if (role[0] === 'master') return now;
          } catch {
            // not up yet
          } finally {
            client.disconnect();
          }
        }
        if (Date.now() > until) throw new Error(`no failover from ${port} within ${withinMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    client(port) {
      return new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
    },
    stop: stopAll,
  };
  return group;
}
