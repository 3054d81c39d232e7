import type { Cluster, Redis } from 'ioredis';
import { fromRedisError } from './errors.js';

/**
 * The client the kernel is given: one server's, or a Redis Cluster's. Every script and every
 * pipeline the kernel sends stays in one slot; reads that span trees go per tree, and a SCAN goes
 * to every master (`mastersOf`).
 */
export type RedisClient = Redis | Cluster;

/** The clients to SCAN: a cluster's masters, or the one server. */
export function mastersOf(redis: RedisClient): Redis[] {
  return redis.isCluster ? (redis as Cluster).nodes('master') : [redis as Redis];
}

/** A Redis call whose failure leaves as a KernelError (`unavailable` when Redis is down). */
export function redisCall<T>(call: Promise<T>): Promise<T> {
  return call.catch((error: unknown) => {
    throw fromRedisError(error);
  });
}

/** Redis's clock in ms (TIME): the one every lease and due time is compared with. */
export async function redisNowMs(redis: RedisClient): Promise<number> {
  const [seconds, micros] = await redisCall(redis.time());
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/**
 * The members of each sorted set scored at most `upTo`, at most `limit` of each: all the sets read
 * at once (all in flight together: one round trip), not one after another.
 * What the periodic sweeps read of every shard, mostly finding nothing.
 */
export function dueIn(
  redis: RedisClient,
  sets: readonly string[],
  upTo: number,
  limit: number,
): Promise<string[][]> {
  return Promise.all(sets.map((set) => redisCall(redis.zrangebyscore(set, '-inf', upTo, 'LIMIT', 0, limit))));
}

/** The results of a pipeline, each failure as a KernelError. */
export async function pipelined(pipeline: {
  exec(): Promise<[Error | null, unknown][] | null>;
}): Promise<unknown[]> {
  const results = (await redisCall(pipeline.exec())) ?? [];
  return results.map(([error, value]) => {
    if (error) throw fromRedisError(error);
    return value;
  });
}
