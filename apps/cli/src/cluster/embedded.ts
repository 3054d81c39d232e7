import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startPrivateRedis } from './redis-server.js';
import { ensureAdminToken, writeClusterFile } from './state-dir.js';

export interface EmbeddedOptions {
  /** State directory (`.libos`): the private Redis's data, the admin token, cluster.json. */
  dir: string;
  workers: number;
  port: number;
  /** Use this Redis instead of a private redis-server. */
  redisUrl?: string | undefined;
  concurrency?: number | undefined;
  /** Where the parts' logs go (default: inherited stderr). */
  stdio?: 'inherit' | 'ignore';
}

export interface EmbeddedCluster {
  url: string;
  redisUrl: string;
  adminToken: string;
  adminTokenFile: string;
  /** Stops workers (they finish or cancel their children), then the coordinator, then Redis. */
  stop(): Promise<void>;
  /** Resolves when any part exits on its own. */
  exited: Promise<string>;
}

const cliMain = fileURLToPath(new URL('../main.js', import.meta.url));

/** Runs `libos <command>` as a child process, with this process's loader flags (tsx in development). */
function spawnPart(args: string[], env: NodeJS.ProcessEnv, stdio: 'inherit' | 'ignore'): ChildProcess {
  const entry = import.meta.url.endsWith('.ts') ? cliMain.replace(/\.js$/, '.ts') : cliMain;
  // Its own process group: a terminal's Ctrl-C reaches only the CLI, which stops the parts in
  // order (workers, then the coordinator, then Redis).
  return spawn(process.execPath, [...process.execArgv, entry, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', stdio, stdio],
    detached: true,
  });
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

/** A whole single-node cluster: a Redis, one coordinator and N workers, as separate OS processes. */
export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedCluster> {
  const stdio = options.stdio ?? 'inherit';
  const { token, file } = await ensureAdminToken(options.dir);
  const redis = options.redisUrl ? undefined : await startPrivateRedis(options.dir);
  const redisUrl = options.redisUrl ?? redis!.url;
  const url = `http://127.0.0.1:${options.port}`;
  // The parts share this terminal: warnings and errors only, unless LIBOS_LOG_LEVEL says otherwise.
  const env = {
    LIBOS_REDIS_URL: redisUrl,
    LIBOS_URL: url,
    LIBOS_LOG_LEVEL: process.env.LIBOS_LOG_LEVEL ?? 'warn',
  };
  // Only the coordinator needs the admin token; a worker never holds it.
  const coordinatorEnv = { ...env, LIBOS_ADMIN_TOKEN: token, LIBOS_PORT: String(options.port) };
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
      parts.push(spawnPart(args, env, stdio));
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  await writeClusterFile(options.dir, {
    url,
    redis_url: redisUrl,
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
  return { url, redisUrl, adminToken: token, adminTokenFile: file, stop: stopAll, exited };
}
