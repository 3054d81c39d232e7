import type { Json } from './json.js';

/**
 * One agent invocation. Its work identity (what replay matches on) is everything but `label`:
 * `kind`, `input`, `maxSteps`, `scope` and `schema`.
 */
export interface AgentCall {
  readonly kind: string;
  readonly input: Json;
  readonly label: string;
  readonly maxSteps?: number;
  /** The workflow's `replayScope`: keeps two programs sharing a journal apart. */
  readonly scope: string;
  /** JSON Schema the report must satisfy; forwarded to the engine, never enforced here. */
  readonly schema?: Json;
}

/** What one launch spent. `costUsd` absent = unknown (never free); `unaccounted` says why counters may fall short. */
export interface AgentAttempt {
  readonly attemptId: string;
  readonly stepsUsed: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly costUsd?: number;
  readonly unaccounted?: string;
}

export type AgentFailure =
  | { readonly type: 'TimedOut' }
  | { readonly type: 'NoReport' }
  | { readonly type: 'MaxSteps' }
  | { readonly type: 'ContextYield' }
  | { readonly type: 'Skipped' }
  | { readonly type: 'Failed'; readonly reason: string };

export const AgentFailure = {
  TimedOut: { type: 'TimedOut' },
  NoReport: { type: 'NoReport' },
  MaxSteps: { type: 'MaxSteps' },
  ContextYield: { type: 'ContextYield' },
  Skipped: { type: 'Skipped' },
  Failed: (reason: string): AgentFailure => ({ type: 'Failed', reason }),
} as const satisfies Record<string, AgentFailure | ((reason: string) => AgentFailure)>;

/** The display text that follows `agent '<label>' ` in an `AgentFailed` message. */
export function failureText(failure: AgentFailure): string {
  switch (failure.type) {
    case 'TimedOut':
      return 'timed out';
    case 'NoReport':
      return 'finished without a report';
    case 'MaxSteps':
      return 'exhausted its step ceiling';
    case 'ContextYield':
      return 'yielded at the context ceiling';
    case 'Skipped':
      return 'was skipped by the user';
    case 'Failed':
      return `failed: ${failure.reason}`;
  }
}

/** `attempt` absent on `DidNotFinish` means no launch was tried (a refusal before any spawn). */
export type AgentOutcome =
  | { readonly type: 'Finished'; readonly value: Json; readonly attempt: AgentAttempt }
  | { readonly type: 'DidNotFinish'; readonly failure: AgentFailure; readonly attempt?: AgentAttempt };

export const AgentOutcome = {
  finished: (value: Json, attempt: AgentAttempt): AgentOutcome => ({ type: 'Finished', value, attempt }),
  didNotFinish: (failure: AgentFailure, attempt?: AgentAttempt): AgentOutcome =>
    attempt === undefined ? { type: 'DidNotFinish', failure } : { type: 'DidNotFinish', failure, attempt },
} as const;

/** A validator's verdict on one journal candidate: serve it (possibly refreshed) or veto it. */
export type ReplayDecision =
  | { readonly type: 'Serve'; readonly outcome: AgentOutcome }
  | { readonly type: 'Rerun' };

export const ReplayDecision = {
  serve: (outcome: AgentOutcome): ReplayDecision => ({ type: 'Serve', outcome }),
  rerun: { type: 'Rerun' } as ReplayDecision,
} as const;

/**
 * Whatever runs one live agent call: a local child process, a cluster, a test script.
 * `run` resolves to an outcome for every ending of the agent; rejecting is reserved for
 * cancellation (honour `signal` promptly: the workflow waits for `run` to settle) and engine bugs.
 */
export interface Runner {
  run(call: AgentCall, signal?: AbortSignal): Promise<AgentOutcome>;
  /** Asked per journal candidate before it is served (default: serve it unchanged). */
  validateReplay?(call: AgentCall, outcome: AgentOutcome): ReplayDecision | Promise<ReplayDecision>;
}

export type AgentDisposition = 'Succeeded' | 'FailedAgent' | 'Interrupted' | 'Errored';

export type WorkflowEvent =
  | { readonly type: 'PhaseStarted'; readonly title: string }
  | { readonly type: 'Log'; readonly message: string }
  | { readonly type: 'AgentStarted'; readonly label: string; readonly kind: string; readonly phase?: string }
  | { readonly type: 'AgentFinished'; readonly label: string; readonly disposition: AgentDisposition }
  | { readonly type: 'AgentReplayed'; readonly label: string; readonly disposition: AgentDisposition };
