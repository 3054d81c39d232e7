import type { Launch, ListProcessesInput } from '@libos/protocol';
import { startRedis, startRedisCluster, type TestRedis, uniquePrefix } from '@libos/testkit';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import {
  Kernel,
  KernelError,
  type KernelLimits,
  mastersOf,
  mintToken,
  type RedisClient,
} from '../src/index.js';

export interface Env {
  redis: Redis;
  /** The same client as `redis`, typed as what it may be (a Cluster's under LIBOS_TEST_REDIS=cluster). */
  client: RedisClient;
  server: TestRedis;
  kernel: Kernel;
  launches: Launch[];
  prefix: string;
}

export const IMAGE = {
  command: 'node',
  args: ['child.js', '{result_file}'],
  skills: ['search', 'edit'],
};

/** LIBOS_TEST_REDIS=cluster: the kernel's tests run against a real 3-master Redis Cluster. */
export const ON_CLUSTER = process.env.LIBOS_TEST_REDIS === 'cluster';

/** One real redis-server per test file, one kernel over it, an `echo` image registered. */
export function useKernel(
  options: { own?: boolean; aof?: boolean; cluster?: boolean; limits?: Partial<KernelLimits> } = {},
): Env {
  const env = { launches: [] as Launch[] } as Env;
  beforeAll(async () => {
    if (options.cluster || (ON_CLUSTER && !options.own && !options.aof)) {
      // A real 3-master Redis Cluster on loopback: the kernel gets an ioredis Cluster.
      const cluster = await startRedisCluster({ masters: 3 });
      env.server = { url: cluster.nodes, source: 'redis-server', stop: () => cluster.stop() };
      const nodes = cluster.ports.map((port) => ({ host: '127.0.0.1', port }));
      env.client = new Cluster(nodes, { shardedSubscribers: true, scaleReads: 'master' });
    } else {
      env.server = await startRedis({ own: options.own, aof: options.aof });
      env.client = new Redis(env.server.url);
    }
    // Tests call commands on `redis`; on a cluster the Cluster client routes them by key.
    env.redis = env.client as Redis;
    // restarts and crashes are expected in durability tests; commands report their own errors
    env.redis.on('error', () => {});
    env.prefix = uniquePrefix('k');
    env.kernel = new Kernel({
      redis: env.client,
      keyPrefix: env.prefix,
      limits: options.limits,
      onLaunch: (launch) => {
        env.launches.push(launch);
      },
    });
    await env.kernel.admin.putImage('echo', IMAGE);
    await env.kernel.admin.putImage('other', { ...IMAGE, skills: ['search', 'review'], pool: 'gpu' });
  });
  afterAll(async () => {
    await env.kernel?.close();
    env.redis?.disconnect();
    await env.server?.stop();
  });
  return env;
}

/** A caller-driven root (the usual test parent). */
export async function root(env: Env, extra: Record<string, unknown> = {}) {
  const created = await env.kernel.admin.createRoot({ goal: 'test root', image: 'echo', ...extra });
  return { pid: created.pid, token: created.token };
}

/** Spawn a child and claim it as a worker would; returns its pid, attempt fence and token. */
export async function runningChild(env: Env, parent: string, args: Record<string, unknown> = {}) {
  const spawned = await env.kernel.tools.spawn_child_process({ pid: parent }, { goal: 'child', ...args });
  const minted = mintToken(spawned.pid);
  const claimed = await env.kernel.worker.claim(spawned.pid, 1, {
    workerId: 'w1',
    tokenHash: minted.tokenHash,
    leaseMs: 60_000,
  });
  return { pid: spawned.pid, fence: claimed.fence, token: minted.token, claimed };
}

export const USAGE = { prompt_tokens: 10, completion_tokens: 5, steps: 2, wall_ms: 100 };

export async function refusal(promise: Promise<unknown>): Promise<KernelError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof KernelError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

/** KEYS on every master (a Redis Cluster's keys are spread over them), or on the one server. */
export async function keysMatching(env: Env, pattern: string): Promise<string[]> {
  const all = await Promise.all(mastersOf(env.client).map((node) => node.keys(pattern)));
  return all.flat();
}

/** Delete every key of the index, all shards (one DEL per key: a Cluster refuses cross-slot ones). */
export async function wipeIndex(env: Env): Promise<void> {
  await env.kernel.flushIndex();
  const keys = await keysMatching(env, `${env.prefix}{idx*}:*`);
  await Promise.all(keys.map((key) => env.redis.del(key)));
}

/** Every page of an admin listing, following cursors (at most 100 pages). */
export async function listPages(
  env: Env,
  query: ListProcessesInput,
): Promise<{ pids: string[]; pages: number }> {
  const pids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await env.kernel.admin.listProcesses({ ...query, ...(cursor ? { cursor } : {}) });
    pids.push(...page.processes.map((p) => p.pid));
    cursor = page.next_cursor ?? undefined;
    pages += 1;
  } while (cursor && pages < 100);
  return { pids, pages };
}

/**
 * Records the name of every command sent on `redis` from now until `stop()` (which puts its
 * `sendCommand` back): how many round trips, and which, an operation takes.
 */
export function recordCommands(redis: Redis): { sent: string[]; stop: () => void } {
  const sent: string[] = [];
  const original = redis.sendCommand.bind(redis) as (...args: unknown[]) => unknown;
  redis.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
    sent.push(command.name);
    return original(command, ...rest);
  }) as typeof redis.sendCommand;
  return { sent, stop: () => (redis.sendCommand = original as typeof redis.sendCommand) };
}

/** The names of the commands sent on `redis` while `run` ran, and what it returned. */
export async function commandsDuring<T>(
  redis: Redis,
  run: () => Promise<T>,
): Promise<{ sent: string[]; value: T }> {
  const recorded = recordCommands(redis);
  try {
    return { sent: recorded.sent, value: await run() };
  } finally {
    recorded.stop();
  }
}
