import type { Kernel, RedisClient } from '@libos/kernel';
import { PROCESS_STATUSES } from '@libos/protocol';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Launcher } from '../launcher.js';
import type { Metrics } from '../metrics.js';

export interface OpsRouteDeps {
  redis: RedisClient;
  kernel: Kernel;
  launcher: Launcher;
  metrics: Metrics;
}

const health = z.object({
  status: z.enum(['ok', 'unavailable']),
  redis: z.object({
    status: z.enum(['ok', 'down']),
    latency_ms: z.number().optional(),
    error: z.string().optional(),
  }),
});

const JOB_STATES = ['waiting', 'active', 'delayed', 'completed', 'failed'] as const;

/** Health (reports Redis), Prometheus metrics (filled from Redis at scrape time). */
export async function opsRoutes(app: FastifyInstance, deps: OpsRouteDeps): Promise<void> {
  app.get(
    '/healthz',
    { schema: { tags: ['ops'], response: { 200: health, 503: health } } },
    async (_request, reply) => {
      const started = performance.now();
      try {
        await deps.redis.ping();
        return {
          status: 'ok',
          redis: { status: 'ok', latency_ms: +(performance.now() - started).toFixed(2) },
        };
      } catch (error) {
        return reply
          .status(503)
          .send({ status: 'unavailable', redis: { status: 'down', error: String(error) } });
      }
    },
  );

  app.get('/metrics', { schema: { tags: ['ops'] } }, async (_request, reply) => {
    const { metrics, kernel, launcher } = deps;
    // Summed over the index shards, this coordinator's pending index records written first.
    const counts = await kernel.admin.indexCounts();
    for (const status of PROCESS_STATUSES)
      metrics.processesByStatus.set({ status }, counts.processes[status]);
    for (const [type, count] of Object.entries(counts.completions)) metrics.completions.set({ type }, count);
    // Per pool, summed over its shards' queues (LIBOS_LAUNCH_SHARDS).
    for (const pool of launcher.pools()) {
      const perQueue = await Promise.all(launcher.queuesOf(pool).map((q) => q.getJobCounts(...JOB_STATES)));
      for (const state of JOB_STATES) {
        const depth = perQueue.reduce((sum, counts) => sum + (counts[state] ?? 0), 0);
        metrics.queueDepth.set({ pool, state }, depth);
      }
    }
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
