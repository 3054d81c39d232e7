import { type ChildProcess, spawn } from 'node:child_process';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { checkRedis, type RedisSettings, redisSettingsFromEnv } from '@libos/redis';

export interface PrivateRedis {
  /** The socket path, or `redis://127.0.0.1:<port>` when the path is too long for a socket. */
  url: string;
  /** The loopback port (it needs the password too). */
  port: number;
  /** The file holding the password (LIBOS_REDIS_PASSWORD_FILE for the parts). */
  passwordFile: string;
  stop(): Promise<void>;
  /** SIGKILL at once (AOF fsyncs every write, so nothing acknowledged is lost). */
  kill(): void;
}

/** Every part started by this process and not yet exited: what a second Ctrl-C kills. */
export const liveParts = new Set<ChildProcess>();

/** Tracks `child` in `liveParts` until it exits. */
export function trackPart(child: ChildProcess): ChildProcess {
  liveParts.add(child);
  child.once('exit', () => liveParts.delete(child));
  child.once('error', () => liveParts.delete(child));
  return child;
}

/** SIGKILLs every live part's process group (each part leads its own), synchronously. */
export function killAllParts(): void {
  for (const part of liveParts) {
    if (part.pid === undefined || part.exitCode !== null || part.signalCode !== null) continue;
    try {
      process.kill(-part.pid, 'SIGKILL');
    } catch {
      try {
        part.kill('SIGKILL');
      } catch {}
    }
  }
}

/** Whether nothing listens on the loopback `port` (where the coordinator would listen). */
export function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' ? resolve(false) : reject(error),
    );
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
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

/** A value for redis.conf: double-quoted, with `\` and `"` escaped (paths may hold spaces). */
function confValue(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * A private redis-server with AOF (fsync every write) whose data lives under `dir`, so an
 * embedded cluster keeps its processes, outcomes and messages across restarts. The parts reach it
 * over a unix socket when its path fits: cheaper per round trip than loopback TCP and unreachable
 * from the network; the loopback port stays open for `redis-cli -p`.
 *
 * Nothing of it is open to another process of this uid without the password: the socket lives in
 * `<dir>/redis/` (0700, and the socket itself 0700), the port needs the password in
 * `passwordFile`. The password reaches redis-server through `<dir>/redis/redis.conf` (0600,
 * written on every start), never its command line (`ps` shows only the config file's path).
 */
export async function startPrivateRedis(dir: string, passwordFile: string): Promise<PrivateRedis> {
  const dataDir = join(dir, 'redis');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await chmod(dataDir, 0o700); // also a directory made by an older libos or under a loose umask
  const password = (await readFile(passwordFile, 'utf8')).trim();
  const port = await freePort();
  const socket = resolve(dataDir, 'redis.sock');
  const viaSocket = socket.length <= MAX_SOCKET_PATH;
  const config = [
    '# Written by `libos up` on every start (edits are lost). It holds the password: mode 0600.',
    `port ${port}`,
    'bind 127.0.0.1',
    'protected-mode yes',
    `dir ${confValue(resolve(dataDir))}`,
    'save ""',
    'appendonly yes',
    'appendfsync always',
    'daemonize no',
    `logfile ${confValue(resolve(dataDir, 'redis.log'))}`,
    ...(viaSocket ? [`unixsocket ${confValue(socket)}`, 'unixsocketperm 700'] : []),
    `requirepass ${confValue(password)}`,
  ];
  const configFile = join(dataDir, 'redis.conf');
  await writeFile(configFile, `${config.join('\n')}\n`, { mode: 0o600 });
  await chmod(configFile, 0o600);
  // Its own process group: a terminal's Ctrl-C reaches the CLI, which stops Redis last. No
  // inherited environment: the operator's may hold LIBOS_ADMIN_TOKEN, and Redis needs none of it.
  const child: ChildProcess = trackPart(
    spawn('redis-server', [resolve(configFile)], {
      stdio: 'ignore',
      detached: true,
      env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin' },
    }),
  );
  const spawnError = await new Promise<Error | undefined>((resolve) => {
    child.once('error', resolve);
    setTimeout(() => resolve(undefined), 100);
  });
  if (spawnError) {
    throw new Error(
      `cannot start redis-server (${spawnError.message}): install it (Debian: apt-get install -y redis-server) or pass --redis-url`,
    );
  }
  // @libos/redis takes a socket path where it takes a URL.
  const url = viaSocket ? socket : `redis://127.0.0.1:${port}`;
  await waitForRedis(
    redisSettingsFromEnv({ LIBOS_REDIS_URL: url, LIBOS_REDIS_PASSWORD_FILE: passwordFile }),
    10_000,
  );
  return {
    url,
    port,
    passwordFile,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.kill('SIGTERM');
      await exited;
      clearTimeout(kill);
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** Until Redis answers a PING with the password; the last error (address, no password) otherwise. */
async function waitForRedis(settings: RedisSettings, withinMs: number): Promise<void> {
  const until = Date.now() + withinMs;
  for (;;) {
    try {
      await checkRedis(settings);
      return;
    } catch (error) {
      if (Date.now() > until) throw new Error(`redis-server did not answer: ${(error as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
