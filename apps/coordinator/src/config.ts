import { readFileSync } from 'node:fs';
import { REAPER_HOLD_MAX_MS, REAPER_HOLD_MIN_MS, terminateBatchSchema } from '@libos/kernel';
import { launchShardsSchema } from '@libos/protocol';
import { redisEnvSchema } from '@libos/redis';
import { z } from 'zod';

const int = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** The coordinator's settings, from the environment (the names of docs/api.md). */
export const coordinatorConfigSchema = z.object({
  /** LIBOS_REDIS_URL, LIBOS_REDIS_PASSWORD_FILE, LIBOS_REDIS_USERNAME (see @libos/redis). */
  ...redisEnvSchema.shape,
  LIBOS_PORT: z.coerce.number().int().min(0).max(65_535).default(7070),
  LIBOS_HOST: z.string().default('127.0.0.1'),
  /** The admin token; `loadCoordinatorConfig` fills it from LIBOS_ADMIN_TOKEN_FILE when that is set. */
  LIBOS_ADMIN_TOKEN: z.string().min(16, 'LIBOS_ADMIN_TOKEN must be at least 16 characters'),
  /**
   * A file holding the admin token (trimmed), in place of LIBOS_ADMIN_TOKEN: a process's
   * environment is readable by every process of its uid (/proc/<pid>/environ), a 0600 file only
   * by its owner.
   */
  LIBOS_ADMIN_TOKEN_FILE: z.string().min(1).optional(),
  /** How long a blocking wait or receive holds one HTTP request before answering `ready: false`. */
  LIBOS_LONG_POLL_MS: int(25_000),
  /** How often the reaper looks for expired leases and launches that never reached the queue. */
  LIBOS_REAPER_INTERVAL_MS: int(2_000),
  /**
   * How long the reaper's hold on its index shards lasts unless a sweep renews it (default 3
   * sweeps, at most a day): a coordinator that dies leaves its shards to the others this long.
   */
  LIBOS_REAPER_HOLD_MS: z.coerce.number().int().min(REAPER_HOLD_MIN_MS).max(REAPER_HOLD_MAX_MS).optional(),
  /** A runnable process whose job is missing for this long is enqueued again (same job id). */
  LIBOS_RELAUNCH_AFTER_MS: int(10_000),
  LIBOS_BODY_LIMIT_BYTES: int(4 * 1024 * 1024),
  /**
   * Tool calls in flight at once on one coordinator (all processes); past it, 503. Each holds a
   * socket, so this keeps the coordinator's file descriptors for Redis and its own work.
   */
  LIBOS_CALLS_HELD: int(10_000),
  /** Tool calls one process has in flight at once; past it, 429. */
  LIBOS_PROCESS_CALLS_HELD: int(256),
  /**
   * Connections accepted at once (a connection past it is closed at once); default the open-files
   * limit less 1,024, kept for Redis and files (see connection-limit.ts).
   */
  LIBOS_MAX_CONNECTIONS: z.coerce.number().int().positive().optional(),
  /** Bytes of tool-call bodies one coordinator holds at once (all processes); past it, 503. */
  LIBOS_BODY_BYTES_HELD: int(128 * 1024 * 1024),
  /** Bytes of tool-call bodies one process's requests hold at once; past it, 429. */
  LIBOS_PROCESS_BODY_BYTES_HELD: int(16 * 1024 * 1024),
  /**
   * How long a client has to send one whole request, headers and body (answering may take longer:
   * long-polls, streams); past it the request is answered 408 and its connection closed.
   */
  LIBOS_REQUEST_TIMEOUT_MS: int(30_000),
  /**
   * At shutdown, how long requests in flight may take to finish (open long-polls answer at once);
   * connections still open after it are closed.
   */
  LIBOS_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(5_000),
  /** A console session (the `/ui` login) ends this long after it began. */
  LIBOS_CONSOLE_SESSION_TTL_MS: int(8 * 60 * 60 * 1000),
  /** Console sessions kept at once (in Redis, shared by every coordinator); a login beyond ends the oldest. */
  LIBOS_CONSOLE_MAX_SESSIONS: int(1000),
  /** Console event streams (`/v1/admin/processes/{pid}/events`) open at once; one more is 429. */
  LIBOS_CONSOLE_MAX_STREAMS: int(200),
  /** The console's built assets; default `@libos/console`'s `dist`. */
  LIBOS_CONSOLE_DIR: z.string().min(1).optional(),
  /**
   * How long a terminal process is kept after its end (once nothing can still ask for it) before
   * the retention sweep deletes it; a root may set its own (`retention_ms`). Default 7 days.
   */
  LIBOS_RETENTION_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(7 * 24 * 3600 * 1000),
  /** How often this coordinator runs the retention sweep (shards are shared among coordinators). */
  LIBOS_GC_INTERVAL_MS: int(5_000),
  /** When set: each deleted process's summary is appended to `<dir>/<YYYY-MM-DD>.jsonl` first. */
  LIBOS_ARCHIVE_DIR: z.string().min(1).optional(),
  /** Completed launch jobs BullMQ keeps (newest; 0: none) and for how long (s): Bull Board's history. */
  LIBOS_QUEUE_KEEP_COMPLETED: z.coerce.number().int().min(0).default(1_000),
  LIBOS_QUEUE_KEEP_COMPLETED_S: int(3600),
  /** Failed launch jobs BullMQ keeps (newest) and for how long (s). */
  LIBOS_QUEUE_KEEP_FAILED: z.coerce.number().int().min(0).default(10_000),
  LIBOS_QUEUE_KEEP_FAILED_S: int(7 * 24 * 3600),
  /**
   * The launch queues one pool is spread over (`{launch-<pool>@<k>}`, by tree): more than one
   * puts a hot pool's launches in several Redis Cluster slots. Workers must have the same.
   */
  LIBOS_LAUNCH_SHARDS: launchShardsSchema,
  /** Approximate length of each launch queue's BullMQ event stream. */
  LIBOS_QUEUE_EVENTS_MAX: int(1_000),
  /** Bytes of messages one mailbox holds (unacknowledged and kept acknowledged ones). */
  LIBOS_MAILBOX_MAX_BYTES: int(64 * 1024 * 1024),
  /** Bytes of messages all the mailboxes of one tree hold together (its children's included). */
  LIBOS_TREE_MAILBOX_BYTES: int(256 * 1024 * 1024),
  /** Unacknowledged messages one mailbox holds. */
  LIBOS_MAILBOX_MAX: int(10_000),
  /** A root's `object_bytes` budget (its whole tree's objects) when neither the request nor its image sets one. */
  LIBOS_TREE_OBJECT_BYTES: int(1024 * 1024 * 1024),
  /**
   * Above this share of Redis's `maxmemory`, new work (spawn, fork, send, create_object, root
   * creation) is refused with 503 `unavailable`/`redis_memory` while work in flight completes.
   */
  LIBOS_REDIS_MEMORY_HIGH_WATER: z.coerce.number().gt(0).max(1).default(0.9),
  /** How often Redis memory is read (one INFO memory per interval). */
  LIBOS_REDIS_MEMORY_CHECK_MS: int(1_000),
  /** The most nodes one `GET /v1/admin/processes/{pid}/tree` answers (one Redis script walks them). */
  LIBOS_TREE_MAX_NODES: int(10_000),
  /** Candidates one page of a filtered `GET /v1/admin/processes` examines at most. */
  LIBOS_LIST_SCAN_MAX: int(5_000),
  /** Children one `spawn_children` call creates at most (one Redis script writes them all). */
  LIBOS_SPAWN_BATCH_MAX: int(256),
  /** Children one `wait_children` call names at most. */
  LIBOS_WAIT_CHILDREN_MAX: int(1_024),
  /**
   * Children one Redis script ends at most when their parent ends (exit, signal, a worker's
   * completion): a wider or deeper tree is ended in further calls, so none holds Redis long.
   */
  LIBOS_TERMINATE_BATCH: terminateBatchSchema,
  LIBOS_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});
export type CoordinatorConfig = z.infer<typeof coordinatorConfigSchema>;

/** The admin token from LIBOS_ADMIN_TOKEN_FILE, when that is set (else `env`'s LIBOS_ADMIN_TOKEN). */
function adminToken(env: NodeJS.ProcessEnv): string | undefined {
  const file = env.LIBOS_ADMIN_TOKEN_FILE;
  if (!file) return env.LIBOS_ADMIN_TOKEN;
  if (env.LIBOS_ADMIN_TOKEN) {
    throw new Error('coordinator configuration: set LIBOS_ADMIN_TOKEN or LIBOS_ADMIN_TOKEN_FILE, not both');
  }
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new Error(`coordinator configuration: LIBOS_ADMIN_TOKEN_FILE: cannot read ${file} (${code})`);
  }
}

/**
 * The coordinator's settings from `env`. The admin token comes from LIBOS_ADMIN_TOKEN or, read
 * here, from the file LIBOS_ADMIN_TOKEN_FILE names; the Redis password file is read by
 * `startCoordinator`.
 */
export function loadCoordinatorConfig(env: NodeJS.ProcessEnv = process.env): CoordinatorConfig {
  const parsed = coordinatorConfigSchema.safeParse({ ...env, LIBOS_ADMIN_TOKEN: adminToken(env) });
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`coordinator configuration: ${problems}`);
  }
  return parsed.data;
}
