import { hostname } from 'node:os';
import { terminateBatchSchema } from '@libos/kernel';
import { launchShardsSchema, poolSchema } from '@libos/protocol';
import { type RedisSettings, redisEnvSchema, redisSettings } from '@libos/redis';
import { z } from 'zod';
import { type IsolationConfig, isolationConfig, isolationEnvShape } from './isolation.js';

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** The worker's environment variables (the names of docs/api.md). */
export const workerEnvSchema = z.object({
  /** LIBOS_REDIS_URL, LIBOS_REDIS_PASSWORD_FILE, LIBOS_REDIS_USERNAME (see @libos/redis). */
  ...redisEnvSchema.shape,
  /**
   * The coordinators' address as children reach it (a load balancer), which they get as their
   * own `LIBOS_URL`. `LIBOS_URL` is taken when it is unset.
   */
  LIBOS_PUBLIC_URL: z.url({ error: 'LIBOS_PUBLIC_URL must be a URL' }).optional(),
  LIBOS_URL: z.url({ error: 'LIBOS_URL must be a URL' }).optional(),
  /** Comma-separated pools, one BullMQ queue each. */
  LIBOS_POOLS: z
    .string()
    .default('default')
    .transform((text) =>
      [...new Set(text.split(',').map((pool) => pool.trim()))].filter((pool) => pool !== ''),
    )
    .pipe(z.array(poolSchema).min(1)),
  /** Children run at once, per pool. */
  LIBOS_CONCURRENCY: positiveInt(4),
  /** The queues each pool is spread over (`{launch-<pool>@<k>}`); the coordinators' setting. */
  LIBOS_LAUNCH_SHARDS: launchShardsSchema,
  LIBOS_WORKER_ID: z.string().min(1).max(200).optional(),
  /**
   * The lease an attempt holds and renews every third of it. A dead worker's attempt is found by
   * the coordinator's reaper once the lease has expired: detection within lease + reaper period.
   */
  LIBOS_LEASE_MS: z.coerce.number().int().min(150).max(3_600_000).default(10_000),
  /** How long `close()` lets running children finish before it cancels them through the contract. */
  LIBOS_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(30_000),
  LIBOS_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  ...isolationEnvShape,
  /** The bound of one attempt's child log (stdout and stderr), kept in Redis; the oldest is dropped. */
  LIBOS_CHILD_LOG_BYTES: z.coerce.number().int().min(1024).max(1_073_741_824).default(1_048_576),
  /** A longer line of a child's output is cut there (and says so). */
  LIBOS_CHILD_LOG_LINE_BYTES: z.coerce.number().int().min(80).max(1_048_576).default(16_384),
  /**
   * A launched child's `WORKFLOW_HOST` reserves this many agent launches when its `children` budget
   * is unlimited (otherwise its remaining `children`, at most this).
   */
  LIBOS_HOSTED_CALLS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  /** Children one Redis script ends at most when a completion ends their parent (as the coordinator's). */
  LIBOS_TERMINATE_BATCH: terminateBatchSchema,
  /** `/metrics` and `/healthz` on this port (for probes and scrapes); none when unset. */
  LIBOS_WORKER_PORT: z.coerce.number().int().min(0).max(65_535).optional(),
  LIBOS_WORKER_HOST: z.string().min(1).default('127.0.0.1'),
});

export interface WorkerConfig {
  /** How to reach Redis (`createRedis` from @libos/redis); the password file is read once, here. */
  redis: RedisSettings;
  /** Given to children as `LIBOS_URL` (LIBOS_PUBLIC_URL, else LIBOS_URL). */
  url: string;
  pools: string[];
  concurrency: number;
  /** LIBOS_LAUNCH_SHARDS: one BullMQ worker per shard of each pool. */
  launchShards: number;
  workerId: string;
  leaseMs: number;
  shutdownGraceMs: number;
  logLevel: z.infer<typeof workerEnvSchema>['LIBOS_LOG_LEVEL'];
  /** How children are contained on this host (see isolation.ts). */
  isolation: IsolationConfig;
  /** Children's output: the per-attempt bound and the line bound, in bytes. */
  childLog: { maxBytes: number; lineBytes: number };
  /** The most agent launches a child's `WORKFLOW_HOST` reserves (`LIBOS_HOSTED_CALLS`). */
  hostedCalls: number;
  /** Children one kernel script ends at most in a parent's cascade (`LIBOS_TERMINATE_BATCH`). */
  terminateBatch: number;
  /** Where `/metrics` and `/healthz` listen, when at all. */
  ops?: { host: string; port: number } | undefined;
}

/** Reads and checks the worker's settings; throws one error naming every bad variable. */
export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const parsed = workerEnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((issue) => `${issue.path.join('.')}: ${issue.message}`)
      .join('; ');
    throw new Error(`worker configuration: ${problems}`);
  }
  const e = parsed.data;
  const url = e.LIBOS_PUBLIC_URL ?? e.LIBOS_URL;
  if (!url) {
    throw new Error(
      'worker configuration: LIBOS_PUBLIC_URL (or LIBOS_URL): the coordinator URL children get is required',
    );
  }
  return {
    redis: redisSettings(e),
    url,
    pools: e.LIBOS_POOLS,
    concurrency: e.LIBOS_CONCURRENCY,
    launchShards: e.LIBOS_LAUNCH_SHARDS,
    workerId: e.LIBOS_WORKER_ID ?? `${hostname()}:${process.pid}`,
    leaseMs: e.LIBOS_LEASE_MS,
    shutdownGraceMs: e.LIBOS_SHUTDOWN_GRACE_MS,
    logLevel: e.LIBOS_LOG_LEVEL,
    isolation: isolationConfig(e),
    childLog: { maxBytes: e.LIBOS_CHILD_LOG_BYTES, lineBytes: e.LIBOS_CHILD_LOG_LINE_BYTES },
    hostedCalls: e.LIBOS_HOSTED_CALLS,
    terminateBatch: e.LIBOS_TERMINATE_BATCH,
    ops:
      e.LIBOS_WORKER_PORT === undefined
        ? undefined
        : { host: e.LIBOS_WORKER_HOST, port: e.LIBOS_WORKER_PORT },
  };
}
