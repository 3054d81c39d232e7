import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { AdminClient, ProcessClient } from '@libos/sdk';
import { freePort, startRedis, type TestRedis } from '@libos/testkit';

const repo = (relative: string) => fileURLToPath(new URL(`../../${relative}`, import.meta.url));
export const CLI_SOURCE = repo('apps/cli/src/main.ts');
export const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';

/** `libos <args>` from source as its own OS process. */
function spawnCli(args: string[], env: Record<string, string>, name: string): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=@libos/source', CLI_SOURCE, ...args], {
    cwd: repo('.'),
    env: { ...process.env, LIBOS_LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'warn', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  child.once('error', (error) => process.stderr.write(`${name}: ${error.message}\n`));
  return child;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function stop(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  child.kill(signal);
  await exited(child);
  clearTimeout(timer);
}

export interface ClusterOptions {
  workers?: number;
  concurrency?: number;
  /** Extra env for the coordinator (e.g. LIBOS_LONG_POLL_MS). */
  coordinatorEnv?: Record<string, string>;
  workerEnv?: Record<string, string>;
}

/** A real cluster: redis-server (AOF), one coordinator and N workers, each its own OS process. */
export class Cluster {
  readonly workers: (ChildProcess | undefined)[] = [];
  coordinator: ChildProcess | undefined;
  readonly admin: AdminClient;

  private constructor(
    readonly redis: TestRedis,
    readonly url: string,
    private readonly port: number,
    private readonly options: ClusterOptions,
  ) {
    this.admin = new AdminClient({ url, adminToken: ADMIN_TOKEN });
  }

  static async start(options: ClusterOptions = {}): Promise<Cluster> {
    const redis = await startRedis({ own: true, aof: true });
    const port = await freePort();
    const cluster = new Cluster(redis, `http://127.0.0.1:${port}`, port, options);
    await cluster.startCoordinator();
    for (let i = 0; i < (options.workers ?? 2); i++) await cluster.startWorker(i);
    return cluster;
  }

  private get baseEnv(): Record<string, string> {
    return { LIBOS_REDIS_URL: this.redis.url, LIBOS_URL: this.url };
  }

  async startCoordinator(): Promise<void> {
    this.coordinator = spawnCli(
      ['coordinator'],
      {
        ...this.baseEnv,
        LIBOS_ADMIN_TOKEN: ADMIN_TOKEN,
        LIBOS_PORT: String(this.port),
        LIBOS_REAPER_INTERVAL_MS: '500',
        ...this.options.coordinatorEnv,
      },
      'coordinator',
    );
    const until = Date.now() + 30_000;
    for (;;) {
      if (this.coordinator.exitCode !== null) throw new Error(`coordinator exited ${this.coordinator.exitCode}`);
      try {
        if ((await fetch(`${this.url}/healthz`)).ok) return;
      } catch {}
      if (Date.now() > until) throw new Error('coordinator did not become healthy');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async stopCoordinator(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (this.coordinator) await stop(this.coordinator, signal);
  }

  async startWorker(index: number, env: Record<string, string> = {}): Promise<ChildProcess> {
    const args = ['worker', '--id', `e2e-${index}`];
    if (this.options.concurrency) args.push('--concurrency', String(this.options.concurrency));
    const worker = spawnCli(args, { ...this.baseEnv, LIBOS_LEASE_MS: '3000', ...this.options.workerEnv, ...env }, `worker ${index}`);
    this.workers[index] = worker;
    return worker;
  }

  async stopWorker(index: number, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const worker = this.workers[index];
    if (worker) await stop(worker, signal);
  }

  /** A caller-driven root and a client acting as it. */
  async root(goal = 'e2e root', extra: Parameters<AdminClient['createProcess']>[0] = { goal }) {
    const created = await this.admin.createProcess({ ...extra, goal });
    return { pid: created.pid, token: created.token!, client: new ProcessClient({ url: this.url, token: created.token! }) };
  }

  async stop(): Promise<void> {
    await Promise.all(this.workers.map((w) => (w ? stop(w) : undefined)));
    if (this.coordinator) await stop(this.coordinator);
    await this.redis.stop();
  }
}
