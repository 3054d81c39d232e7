export { brief } from './brief.js';
export { currentSignal, isAbortError } from './cancellation.js';
export {
  type ClusterRunnerOptions,
  clusterRunner,
  NO_USAGE,
} from './cluster-runner.js';
export {
  allOk,
  attempt,
  collectOk,
  fanOut,
  type GroupOptions,
  parallel,
  parallelAll,
  quorum,
  type Result,
  type Thunk,
} from './combinators.js';
export { type ContractRunnerOptions, contractRunner, type LaunchSpec } from './contract-runner.js';
export {
  AgentFailed,
  CallBudgetExhausted,
  JournalCorrupted,
  QuorumNotReached,
  WorkflowError,
} from './errors.js';
export {
  CANCELLED_UNACCOUNTED,
  type EmitLine,
  HANDOFF_VERSION,
  HandoffError,
  HOSTED_DEFAULT_DEADLINE_MS,
  HostedContext,
  type HostedEvent,
  type HostedStatus,
  hostedContext,
  WORKFLOW_HOST,
} from './hosted.js';
export { endingOf, hostedLaunch } from './hosted-launch.js';
export {
  decodeEntry,
  encodeEntry,
  encodeJournalLine,
  journalEntrySchema,
  readJournalEntries,
} from './journal/codec.js';
export type { JournalEntry } from './journal/entry.js';
export { fileJournal } from './journal/file.js';
export { type Journal, type JournalClaim, memoryJournal, sameWork } from './journal/journal.js';
export { type RedisJournalOptions, redisJournal } from './journal/redis.js';
export { type Json, jsonEqual } from './json.js';
export {
  type Backoff,
  exponentialBackoff,
  fixedBackoff,
  immediate,
  type RetryOptions,
  retry,
  worthRetrying,
} from './retry.js';
export {
  type AgentAttempt,
  type AgentCall,
  type AgentDisposition,
  AgentFailure,
  AgentOutcome,
  failureText,
  ReplayDecision,
  type Runner,
  type WorkflowEvent,
} from './types.js';
export { type AgentCallOptions, type AgentOptions, Workflow, type WorkflowOptions } from './workflow.js';
