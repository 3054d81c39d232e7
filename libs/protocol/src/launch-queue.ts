import { z } from 'zod';
import { rootOf } from './common.js';
import { shardOf } from './shard.js';

/**
 * The launch queues' shared names: the coordinator enqueues, workers consume. BullMQ keeps a
 * queue's keys at `<prefix>:<name>:...`; the hash tag is the queue's name (`{launch-<pool>}`),
 * so every queue is one Redis Cluster slot of its own, as BullMQ requires, and pools (and a
 * pool's shards) spread over the masters.
 */
export const QUEUE_PREFIX = 'libos';

/**
 * Before the queues were sharded every queue was `launch-<pool>` under the prefix `{libos}`: one slot for all
 * launches. Workers still drain it, and the coordinator still finds (and withdraws) jobs there,
 * so launches enqueued before an upgrade run after it.
 */
export const LEGACY_QUEUE_PREFIX = '{libos}';
export function legacyLaunchQueueName(pool: string): string {
  return `launch-${pool}`;
}

/** A pool's name: no `@`, `{` or `}`, so a queue's name says its pool and shard. */
export const poolSchema = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'a pool is 1-64 of A-Z a-z 0-9 . _ -');

/** The most queues a pool may be spread over (`LIBOS_LAUNCH_SHARDS`). */
export const MAX_LAUNCH_SHARDS = 64;
export const launchShardsSchema = z.coerce.number().int().min(1).max(MAX_LAUNCH_SHARDS).default(1);

/**
 * Shard `shard` of a pool's `shards` queues: `{launch-<pool>@<shard>}`, or `{launch-<pool>}` when
 * the pool is one queue.
 */
export function launchQueueName(pool: string, shard = 0, shards = 1): string {
  return shards <= 1 ? `{launch-${pool}}` : `{launch-${pool}@${shard}}`;
}

/** Every queue of a pool, shard 0 first. */
export function launchQueueNames(pool: string, shards: number): string[] {
  return Array.from({ length: Math.max(1, shards) }, (_, shard) => launchQueueName(pool, shard, shards));
}

/** The queue a process's launches go to: its tree's shard, by the kernel's hash of the root pid. */
export function launchQueueOf(pool: string, pid: string, shards: number): string {
  return launchQueueName(pool, shards <= 1 ? 0 : shardOf(rootOf(pid), shards), shards);
}

/** The pool a queue name (new or legacy) belongs to. */
export function poolOfQueue(name: string): string {
  return name.replace(/^\{launch-(.*?)(@\d+)?\}$/, '$1').replace(/^launch-/, '');
}

/** A queue's Redis key base, `<prefix>:<name>:`, for KEDA triggers and direct inspection. */
export function launchQueueKey(name: string, prefix = QUEUE_PREFIX): string {
  return `${prefix}:${name}:`;
}

/** BullMQ refuses `:` in custom ids, so the attempt is joined with `-a`. */
export function launchJobId(pid: string, attempt: number): string {
  return `${pid}-a${attempt}`;
}

/** A job carries only what names the launch: no token, no goal, no input. */
export const launchJobSchema = z.strictObject({ pid: z.string(), attempt: z.number().int().min(1) });
export type LaunchJob = z.infer<typeof launchJobSchema>;
