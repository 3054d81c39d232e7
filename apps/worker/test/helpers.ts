import { chmodSync, mkdtempSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kernel } from '@libos/kernel';
import {
  type BudgetRequest,
  type ImageSpecInput,
  type LaunchJob,
  launchJobId,
  launchQueueName,
  type ProcessView,
  QUEUE_PREFIX,
  type ToolArgs,
} from '@libos/protocol';
import { startRedis, type TestRedis } from '@libos/testkit';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { type Logger, pino } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { loadWorkerConfig, type RunningWorker, startWorker, type WorkerConfig } from '../src/index.js';

/** Children never reach it in these tests; it is only checked to arrive in their environment. */
export const COORDINATOR_URL = 'http://127.0.0.1:7070';
export const LEASE_MS = 600;
/** The repository: where the test images' programs live, shown read-only in every sandbox. */
export const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url)).replace(/\/$/, '');
/**
 * The cwd of every root these tests create, so their children see it (and the scratch dirs made
 * inside it) read-write in their sandboxes; world-writable, since each child has a uid of its own.
 */
export const WORKSPACE = mkdtempSync(join(tmpdir(), 'worker-ws-'));
chmodSync(WORKSPACE, 0o777);

export interface Harness {
  server: TestRedis;
  redis: Redis;
  /** The coordinator side: records processes and enqueues their launches like the coordinator. */
  kernel: Kernel;
  queue(pool?: string): Queue<LaunchJob>;
  workerEnv(extra?: Record<string, string>): Record<string, string>;
  /** An in-process worker, closed after the file if the test does not close it. */
  startWorker(extra?: Record<string, string>, logger?: Logger): Promise<RunningWorker>;
}

/**
 * One real redis-server per test file (its own, so the default key and queue prefixes are safe),
 * a kernel over it as the coordinator side, and BullMQ queues fed by its launches.
 */
export function useHarness(options: { aof?: boolean } = {}): Harness {
  const queues = new Map<string, Queue<LaunchJob>>();
  const workers: RunningWorker[] = [];
  const h = {} as Harness;
  let queueConnection: Redis;
  h.queue = (pool = 'default') => {
    let queue = queues.get(pool);
    if (!queue) {
      queue = new Queue<LaunchJob>(launchQueueName(pool), {
        connection: queueConnection,
        prefix: QUEUE_PREFIX,
      });
      queue.on('error', () => undefined); // connection drops in fault tests; calls still reject
      queues.set(pool, queue);
    }
    return queue;
  };
  h.workerEnv = (extra = {}) => ({
    LIBOS_REDIS_URL: h.server.url,
    LIBOS_URL: COORDINATOR_URL,
    LIBOS_LEASE_MS: String(LEASE_MS),
    LIBOS_CONCURRENCY: '4',
    LIBOS_LOG_LEVEL: process.env.WORKER_TEST_LOG ?? 'silent',
    LIBOS_SANDBOX_RUNTIME: REPO_ROOT,
    ...extra,
  });
  h.startWorker = async (extra = {}, logger?: Logger) => {
    const config: WorkerConfig = loadWorkerConfig(h.workerEnv(extra));
    const worker = await startWorker(config, {
      logger: logger ?? pino({ level: config.logLevel, base: null }, pino.destination(2)),
    });
    workers.push(worker);
    return worker;
  };
  beforeAll(async () => {
    h.server = await startRedis({ own: true, aof: options.aof ?? false });
    h.redis = new Redis(h.server.url);
    queueConnection = new Redis(h.server.url, { maxRetriesPerRequest: null });
    // Fault tests drop connections on purpose; failed commands still reject where they are made.
    for (const connection of [h.redis, queueConnection]) connection.on('error', () => undefined);
    h.kernel = new Kernel({
      redis: h.redis,
      onLaunch: async (launch) => {
        await h
          .queue(launch.pool)
          .add(
            'launch',
            { pid: launch.pid, attempt: launch.attempt },
            { jobId: launchJobId(launch.pid, launch.attempt), attempts: 1 },
          );
      },
    });
  });
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.close()));
    await Promise.all([...queues.values()].map((queue) => queue.close()));
    await h.kernel?.close();
    queueConnection?.disconnect();
    h.redis?.disconnect();
    await h.server?.stop();
    await rm(WORKSPACE, { recursive: true, force: true });
  });
  return h;
}

let imageCount = 0;

/** Registers an image under a fresh name and returns the name. */
export async function image(h: Harness, spec: ImageSpecInput): Promise<string> {
  imageCount += 1;
  const name = `img-${imageCount}`;
  await h.kernel.admin.putImage(name, spec);
  return name;
}

/** `sh -c SCRIPT sh {result_file} ...extra`: the result path arrives as `$1`, extras as `$2…`. */
export function sh(script: string, ...extra: string[]): { command: string; args: string[] } {
  return { command: 'sh', args: ['-c', script, 'sh', '{result_file}', ...extra] };
}

/** Shell: the request id of the request line in `$request`. */
export const REQUEST_ID = `id=$(printf '%s' "$request" | sed 's/.*"request_id":"\\([^"]*\\)".*/\\1/')`;
/** Shell: write a completed result with OUTPUT (JSON) to `$1`, atomically. */
export function completed(output: string): string {
  return `printf '{"version":1,"request_id":"%s","status":"completed","output":${output}}' "$id" > "$1.tmp" && mv "$1.tmp" "$1"`;
}

/** A caller-driven root: the parent that spawns and waits in these tests. */
export async function root(h: Harness, budget?: BudgetRequest): Promise<string> {
  const created = await h.kernel.admin.createRoot({
    goal: 'test parent',
    cwd: WORKSPACE,
    ...(budget ? { resource_budget: budget } : {}),
  });
  return created.pid;
}

export async function spawn(
  h: Harness,
  parent: string,
  imageName: string,
  extra: Partial<ToolArgs<'spawn_child_process'>> = {},
): Promise<string> {
  const spawned = await h.kernel.tools.spawn_child_process(
    { pid: parent },
    { goal: extra.goal ?? 'test child', image: imageName, ...extra },
  );
  return spawned.pid;
}

/** The parent's blocking wait, asked again after each long-poll window until ready. */
export async function waitChild(h: Harness, parent: string, child: string, withinMs = 15_000) {
  const until = Date.now() + withinMs;
  for (;;) {
    const answer = await h.kernel.tools.wait_child_process(
      { pid: parent },
      { child_pid: child },
      { pollMs: Math.max(1, Math.min(2_000, until - Date.now())) },
    );
    if (answer.ready) return answer;
    if (Date.now() >= until) throw new Error(`${child} did not end within ${withinMs} ms`);
  }
}

export async function view(h: Harness, pid: string): Promise<ProcessView> {
  return h.kernel.admin.getProcess(pid);
}

/** Polls `probe` every 20 ms until it returns a value other than undefined, or fails after `ms`. */
export async function eventually<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  ms = 10_000,
  what = 'condition',
): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export async function statusIs(h: Harness, pid: string, status: ProcessView['status'], ms = 10_000) {
  return eventually(
    async () => {
      const v = await view(h, pid);
      return v.status === status ? v : undefined;
    },
    ms,
    `${pid} to be ${status}`,
  );
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function scratch(): Promise<{
  dir: string;
  file(name: string): string;
  cleanup(): Promise<void>;
}> {
  const dir = await mkdtemp(join(WORKSPACE, 'scratch-'));
  await chmod(dir, 0o777);
  return { dir, file: (name) => join(dir, name), cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export async function readLines(path: string): Promise<string[]> {
  try {
    return (await readFile(path, 'utf8')).split('\n').filter((line) => line !== '');
  } catch {
    return [];
  }
}

/** The state letter of /proc/<pid>/stat (R, S, T, Z, ...), or undefined when the process is gone. */
export function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}

/** Alive and not a zombie (an orphan's zombie may never be reaped here, so it counts as gone). */
export function isAlive(pid: number): boolean {
  const state = procState(pid);
  return state !== undefined && state !== 'Z' && state !== 'X';
}
