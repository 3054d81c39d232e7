import type { Launch } from '@libos/protocol';
import { startRedis, type TestRedis, uniquePrefix } from '@libos/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { Kernel, KernelError, type KernelLimits, mintToken } from '../src/index.js';

export interface Env {
  redis: Redis;
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

/** One real redis-server per test file, one kernel over it, an `echo` image registered. */
export function useKernel(
  options: { own?: boolean; aof?: boolean; limits?: Partial<KernelLimits> } = {},
): Env {
  const env = { launches: [] as Launch[] } as Env;
  beforeAll(async () => {
    env.server = await startRedis({ own: options.own, aof: options.aof });
    env.redis = new Redis(env.server.url);
    // restarts and crashes are expected in durability tests; commands report their own errors
    env.redis.on('error', () => {});
    env.prefix = uniquePrefix('k');
    env.kernel = new Kernel({
      redis: env.redis,
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
