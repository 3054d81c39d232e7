import type { Cluster, Redis } from 'ioredis';

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
