export type { AdminOps, StaleLaunch } from './admin.js';
export { DEFAULT_ROOT_CAPABILITIES } from './admin.js';
export {
  type ChildLogs,
  LOG_LINE_OVERHEAD,
  type LogBatch,
  type LogReadOptions,
  type LogRecord,
  logLineBytes,
} from './child-logs.js';
export {
  type Caller,
  type CallerProof,
  type CallOptions,
  DEFAULT_LIMITS,
  type KernelLimits,
  type KernelOptions,
  terminateBatchSchema,
} from './core.js';
export { KernelError } from './errors.js';
export type { IndexCounts } from './index-admin.js';
export { type AuthenticatedCaller, Kernel, type KernelTools } from './kernel.js';
export { ALL_INDEX_SHARDS, INDEX_SHARDS, Keys } from './keys.js';
export { REAPER_HOLD_MAX_MS, REAPER_HOLD_MIN_MS, type ReaperShards } from './reaper-shards.js';
export { mastersOf, type RedisClient } from './redis-client.js';
export {
  type ArchiveRecord,
  type ArchiveSink,
  GC_SHARDS,
  gcShardOf,
  type Retention,
  type SweepOptions,
  type SweepReport,
} from './retention.js';
export { scriptNames } from './scripts.js';
export { hashSecret, mintToken, parseToken } from './tokens.js';
export { type WakeEvent, WakeHub, type WakeListener, type WakeTopic } from './wake-hub.js';
export type { ClaimOptions, Recovery, WorkerOps } from './worker-ops.js';
