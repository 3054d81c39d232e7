import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';

export interface PrivateRedis {
  url: string;
  stop(): Promise<void>;
}

/** A free loopback port (the kernel picks; a race with another binder is possible but rare). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Longest unix socket path the kernel takes (sun_path is 108 bytes on Linux), with margin. */
const MAX_SOCKET_PATH = 100;

/**
 * A private redis-server with AOF (fsync every write) whose data lives under `dir`, so an
 * embedded cluster keeps its processes, outcomes and messages across restarts. The parts reach it
 * over a unix socket (owner-only) when its path fits: cheaper per round trip than loopback TCP
 * and unreachable from the network; the loopback port stays open for `redis-cli -p`.
 */
export async function startPrivateRedis(dir: string): Promise<PrivateRedis> {
  const dataDir = join(dir, 'redis');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dataDir, '--save', ''];
  args.push('--appendonly', 'yes', '--appendfsync', 'always', '--daemonize', 'no');
  args.push('--logfile', join(dataDir, 'redis.log'));
  const socket = resolve(dataDir, 'redis.sock');
  const viaSocket = socket.length <= MAX_SOCKET_PATH;
  if (viaSocket) args.push('--unixsocket', socket, '--unixsocketperm', '700');
  // Its own process group: a terminal's Ctrl-C reaches the CLI, which stops Redis last.
  const child: ChildProcess = spawn('redis-server', args, { stdio: 'ignore', detached: true });
  const spawnError = await new Promise<Error | undefined>((resolve) => {
    child.once('error', resolve);
    setTimeout(() => resolve(undefined), 100);
  });
  if (spawnError) {
    throw new Error(
      `cannot start redis-server (${spawnError.message}): install it (Debian: apt-get install -y redis-server) or pass --redis-url`,
    );
  }
  // ioredis takes a socket path where it takes a URL.
  const url = viaSocket ? socket : `redis://127.0.0.1:${port}`;
  await waitForRedis(url, 10_000);
  return {
    url,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.kill('SIGTERM');
      await exited;
      clearTimeout(kill);
    },
  };
}

async function waitForRedis(url: string, withinMs: number): Promise<void> {
  const until = Date.now() + withinMs;
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => {}); // failures surface through connect()
    try {
      await client.connect();
      await client.ping();
      return;
    } catch (error) {
      if (Date.now() > until) throw new Error(`redis-server at ${url} did not answer: ${String(error)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      client.disconnect();
    }
  }
}
