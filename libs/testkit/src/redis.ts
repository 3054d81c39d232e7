import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { exited, spawnOwned } from './children.js';

/** A Redis for one test file. `restart` and `kill` exist only when the harness owns the server. */
export interface TestRedis {
  readonly url: string;
  /** The server's `requirepass` when one was asked for (`url` carries no password). */
  readonly password?: string;
  /** Where the data lives (owned servers only). */
  readonly dir?: string;
  /** How the server was found: an env URL, a local redis-server, or a container. */
  readonly source: 'env' | 'redis-server' | 'container';
  /** Stop the server (SIGTERM, so AOF is flushed) and start it again on the same port and dir. */
  restart?(): Promise<void>;
  /** SIGKILL the server and start it again on the same port and dir: a crash, not a shutdown. */
  crash?(): Promise<void>;
  stop(): Promise<void>;
}

export interface StartRedisOptions {
  /** Always start a private server (needed by tests that restart or crash Redis). */
  own?: boolean;
  /** appendonly yes + appendfsync always: every acknowledged write survives a crash. */
  aof?: boolean;
  /** With `aof`: fsync every write (`always`, the default: nothing acknowledged is lost in a crash) or once a second. */
  fsync?: 'always' | 'everysec';
  /** Also listen on a unix socket in the server's dir, and make `url` its path (ioredis takes either). */
  unixSocket?: boolean;
  /**
   * Require this password (`requirepass`); implies a private redis-server. `url` stays without
   * it, so a client must be given it (tests of authentication).
   */
  password?: string;
}

const HOW_TO_GET_ONE =
  'No Redis for tests: set LIBOS_TEST_REDIS_URL, or put redis-server on PATH ' +
  '(Debian: apt-get install -y redis-server), or run a container runtime for testcontainers.';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Waits until the server at `url` answers. With `dir`, it must be the server started there: a free
 * port can be taken by another test's server between `freePort` and the bind (ours then exits),
 * and that server would answer the ping; `false` says so.
 */
async function waitForPing(
  url: string,
  deadlineMs: number,
  password?: string,
  dir?: string,
): Promise<boolean> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const client = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      ...(password === undefined ? {} : { password }),
    });
    client.on('error', () => {}); // failures surface through connect()
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') {
        if (dir === undefined) return true;
        const [, served] = (await client.config('GET', 'dir')) as string[];
        return served === dir;
      }
    } catch (error) {
      if (Date.now() > until) throw new Error(`redis at ${url} did not answer: ${String(error)}`);
    } finally {
      client.disconnect();
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** One local redis-server's settings: what it is launched with, again on a restart. */
interface ServerSpec {
  port: number;
  dir: string;
  aof: false | 'always' | 'everysec';
  socket: string | undefined;
  password: string | undefined;
}

function launchRedisServer({ port, dir, aof, socket, password }: ServerSpec): ChildProcess {
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--daemonize',
    'no',
  ];
  args.push(...(aof ? ['--appendonly', 'yes', '--appendfsync', aof] : ['--appendonly', 'no']));
  if (socket) args.push('--unixsocket', socket, '--unixsocketperm', '700');
  // Test passwords only: on the command line, where `ps` shows it (libos up writes a 0600 file).
  if (password !== undefined) args.push('--requirepass', password);
  return spawnOwned('redis-server', args, { stdio: 'ignore' });
}

async function startLocalServer(
  aof: false | 'always' | 'everysec',
  unixSocket: boolean,
  password: string | undefined,
): Promise<TestRedis | undefined> {
  const dir = await mkdtemp(join(tmpdir(), 'libos-redis-'));
  const socket = unixSocket ? join(dir, 'redis.sock') : undefined;
  for (let tries = 1; ; tries += 1) {
    const port = await freePort();
    const url = socket ?? `redis://127.0.0.1:${port}`;
    const spec: ServerSpec = { port, dir, aof, socket, password };
    const child = launchRedisServer(spec);
    const missing = await new Promise<boolean>((resolve) => {
      child.once('error', () => resolve(true));
      setTimeout(() => resolve(false), 50);
    });
    if (missing) {
      await rm(dir, { recursive: true, force: true });
      return undefined;
    }
    if (await waitForPing(url, 10_000, password, socket ? undefined : dir))
      return serverHandle(child, spec, url);
    child.kill('SIGKILL');
    await exited(child);
    if (tries === 5) throw new Error(`redis-server: ports taken by other servers ${tries} times in a row`);
  }
}

function serverHandle(first: ChildProcess, spec: ServerSpec, url: string): TestRedis {
  const { dir, password } = spec;
  let child = first;
  const relaunch = async (signal: NodeJS.Signals) => {
    child.kill(signal);
    await exited(child);
    child = launchRedisServer(spec);
    await waitForPing(url, 10_000, password);
  };
  return {
    url,
    ...(password === undefined ? {} : { password }),
    dir,
    source: 'redis-server',
    restart: () => relaunch('SIGTERM'),
    crash: () => relaunch('SIGKILL'),
    async stop() {
      child.kill('SIGTERM');
      await exited(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function startContainer(): Promise<TestRedis | undefined> {
  try {
    const { RedisContainer } = await import('@testcontainers/redis');
    const container = await new RedisContainer('redis:7').start();
    return {
      url: container.getConnectionUrl(),
      source: 'container',
      stop: async () => void (await container.stop()),
    };
  } catch {
    return undefined;
  }
}

/**
 * A real Redis for a test file: LIBOS_TEST_REDIS_URL when set (and `own` is not asked), else a
 * throwaway redis-server from PATH on a free loopback port with its own temp dir, else a
 * testcontainers Redis, else a clear error. Never a mock. With `password`, always a private
 * redis-server that requires it.
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<TestRedis> {
  const envUrl = process.env.LIBOS_TEST_REDIS_URL;
  const own = options.own || options.password !== undefined;
  if (envUrl && !own) {
    await waitForPing(envUrl, 5_000);
    return { url: envUrl, source: 'env', stop: async () => {} };
  }
  const local = await startLocalServer(
    options.aof ? (options.fsync ?? 'always') : false,
    options.unixSocket ?? false,
    options.password,
  );
  if (local) return local;
  if (!own) {
    const container = await startContainer();
    if (container) return container;
  }
  throw new Error(HOW_TO_GET_ONE);
}
