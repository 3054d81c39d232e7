import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { redactRedisUrl } from '@libos/redis';
import { startPrivateRedis, trackPart } from './redis-server.js';
import { ensureAdminToken, ensureRedisPassword, writeClusterFile } from './state-dir.js';

export interface EmbeddedOptions {
  /** State directory (`.libos`): the private Redis's data, the admin token, cluster.json. */
  dir: string;
  workers: number;
  port: number;
  /**
   * Use this Redis instead of a private redis-server; passed to the parts unchanged, with the
   * operator's LIBOS_REDIS_PASSWORD_FILE and LIBOS_REDIS_USERNAME.
   */
  redisUrl?: string | undefined;
  concurrency?: number | undefined;
  /** Where the parts' logs go (default: inherited stderr). */
  stdio?: 'inherit' | 'ignore';
  /** The operator's environment the parts' environments are made from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

export interface EmbeddedCluster {
  url: string;
  /** As the parts got it: may hold a password when the operator's --redis-url had one (log `redactRedisUrl` of it). */
  redisUrl: string;
  /** The private Redis's password file (undefined with --redis-url). */
  redisPasswordFile: string | undefined;
  adminToken: string;
  adminTokenFile: string;
  /** Stops workers (they finish or cancel their children), then the coordinator, then Redis. */
  stop(): Promise<void>;
  /** Resolves when any part exits on its own. */
  exited: Promise<string>;
}

const cliMain = fileURLToPath(new URL('../main.js', import.meta.url));

/**
 * Never passed on from the operator's environment to a part: secrets (the admin token, a process
 * token) and the Redis settings, which `startEmbedded` decides itself.
 */
const NEVER_INHERITED = new Set([
  'LIBOS_ADMIN_TOKEN',
  'LIBOS_ADMIN_TOKEN_FILE',
  'LIBOS_TOKEN',
  'LIBOS_PID',
  'LIBOS_REDIS_URL',
  'LIBOS_REDIS_PASSWORD_FILE',
  'LIBOS_REDIS_USERNAME',
  'LIBOS_REDIS_CLUSTER_NODES',
]);

/**
 * A part's whole environment: the operator's, minus `NEVER_INHERITED` and minus every other
 * `LIBOS_*` that `keep` refuses, then `own` on top.
 */
export function partEnvironment(
  operator: NodeJS.ProcessEnv,
  keep: (name: string) => boolean,
  own: Record<string, string>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(operator)) {
    if (value === undefined) continue;
    if (name.startsWith('LIBOS_') && (NEVER_INHERITED.has(name) || !keep(name))) continue;
    env[name] = value;
  }
  return { ...env, ...own };
}

/**
 * The `LIBOS_*` settings a worker takes from the operator's environment: its own (pools,
 * concurrency, lease, isolation, …, as `workerEnvSchema` lists them), nothing else. Workers run
 * untrusted children: the admin token and anything else of the operator's never reach them.
 */
async function workerSettingNames(): Promise<Set<string>> {
  const { workerEnvSchema } = await import('@libos/worker');
  return new Set(Object.keys(workerEnvSchema.shape));
}

/** Runs `libos <command>` as a child process, with this process's loader flags (tsx in development). */
function spawnPart(args: string[], env: Record<string, string>, stdio: 'inherit' | 'ignore'): ChildProcess {
  const entry = import.meta.url.endsWith('.ts') ? cliMain.replace(/\.js$/, '.ts') : cliMain;
  // Its own process group: a terminal's Ctrl-C reaches only the CLI, which stops the parts in
  // order (workers, then the coordinator, then Redis).
  return trackPart(
    spawn(process.execPath, [...process.execArgv, entry, ...args], {
      env,
      stdio: ['ignore', stdio, stdio],
      detached: true,
    }),
  );
}

async function waitHealthy(url: string, part: ChildProcess, withinMs: number): Promise<void> {
  const until = Date.now() + withinMs;
  while (Date.now() < until) {
    if (part.exitCode !== null || part.signalCode !== null) {
      throw new Error(`the coordinator exited (${part.signalCode ?? part.exitCode}) while starting`);
    }
    try {
      const response = await fetch(`${url}/healthz`);
      if (response.ok) return;
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the coordinator at ${url} was not healthy within ${withinMs} ms`);
}

function stopPart(part: ChildProcess, graceMs: number): Promise<void> {
  if (part.exitCode !== null || part.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => part.kill('SIGKILL'), graceMs);
    part.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    part.kill('SIGTERM');
  });
}

/**
 * Where libos runs from: the outermost directory whose `node_modules` holds `@libos` (the
 * checkout's workspace root, or the project libos is installed in).
 */
function installRoot(): string {
  let root = dirname(fileURLToPath(import.meta.url));
  for (let dir = root; dirname(dir) !== dir; dir = dirname(dir)) {
    if (existsSync(join(dir, 'node_modules', '@libos'))) root = dir;
  }
  return root;
}

function joinPaths(...paths: (string | undefined)[]): string {
  return paths.filter((path) => path !== undefined && path !== '').join(':');
}

/** A whole single-node cluster: a Redis, one coordinator and N workers, as separate OS processes. */
export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedCluster> {
  const stdio = options.stdio ?? 'inherit';
  const operator = options.env ?? process.env;
  const workerSettings = await workerSettingNames();
  const { token, file } = await ensureAdminToken(options.dir, operator);
  const privatePassword = options.redisUrl ? undefined : await ensureRedisPassword(options.dir);
  const redis = privatePassword ? await startPrivateRedis(options.dir, privatePassword.file) : undefined;
  const redisUrl = options.redisUrl ?? redis!.url;
  // The parts get the password's file, not the password: a process's environment is readable by
  // every process of the same uid (/proc/<pid>/environ).
  const redisEnv: Record<string, string> = redis
    ? { LIBOS_REDIS_URL: redisUrl, LIBOS_REDIS_PASSWORD_FILE: redis.passwordFile }
    : {
        LIBOS_REDIS_URL: redisUrl,
        ...(operator.LIBOS_REDIS_PASSWORD_FILE
          ? { LIBOS_REDIS_PASSWORD_FILE: operator.LIBOS_REDIS_PASSWORD_FILE }
          : {}),
        ...(operator.LIBOS_REDIS_USERNAME ? { LIBOS_REDIS_USERNAME: operator.LIBOS_REDIS_USERNAME } : {}),
      };
  const url = `http://127.0.0.1:${options.port}`;
  // The parts share this terminal: warnings and errors only, unless LIBOS_LOG_LEVEL says otherwise.
  const common = { ...redisEnv, LIBOS_URL: url, LIBOS_LOG_LEVEL: operator.LIBOS_LOG_LEVEL ?? 'warn' };
  // Only the coordinator gets the admin token, and as a file.
  const coordinatorEnv = partEnvironment(operator, () => true, {
    ...common,
    LIBOS_ADMIN_TOKEN_FILE: file,
    LIBOS_PORT: String(options.port),
  });
  // Children's sandboxes show libos's own files (the images `libos up` users run: shims, the
  // examples) read-only, and never the state directory (tokens, Redis's socket and data).
  const workerEnv = partEnvironment(operator, (name) => workerSettings.has(name), {
    ...common,
    LIBOS_SANDBOX_RUNTIME: joinPaths(operator.LIBOS_SANDBOX_RUNTIME, installRoot()),
    LIBOS_SANDBOX_HIDE: joinPaths(operator.LIBOS_SANDBOX_HIDE, resolve(options.dir)),
  });
  const parts: ChildProcess[] = [];
  const stopAll = async () => {
    const [coordinator, ...workers] = parts;
    await Promise.all(workers.map((w) => stopPart(w, 30_000)));
    if (coordinator) await stopPart(coordinator, 10_000);
    await redis?.stop();
  };
  try {
    const coordinator = spawnPart(['coordinator'], coordinatorEnv, stdio);
    parts.push(coordinator);
    await waitHealthy(url, coordinator, 20_000);
    for (let i = 0; i < options.workers; i++) {
      const args = ['worker', '--id', `embedded-${i + 1}`];
      if (options.concurrency) args.push('--concurrency', String(options.concurrency));
      parts.push(spawnPart(args, workerEnv, stdio));
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  await writeClusterFile(options.dir, {
    url,
    redis_url: redactRedisUrl(redisUrl),
    ...(redis ? { redis_password_file: redis.passwordFile } : {}),
    admin_token_file: file,
    pid: process.pid,
    started_at: new Date().toISOString(),
  });
  const exited = Promise.race(
    parts.map(
      (part, i) =>
        new Promise<string>((resolve) =>
          part.once('exit', (code, signal) =>
            resolve(`${i === 0 ? 'the coordinator' : `worker ${i}`} exited (${signal ?? code})`),
          ),
        ),
    ),
  );
  return {
    url,
    redisUrl,
    redisPasswordFile: redis?.passwordFile,
    adminToken: token,
    adminTokenFile: file,
    stop: stopAll,
    exited,
  };
}
