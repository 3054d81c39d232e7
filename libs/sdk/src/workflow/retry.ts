import { sleep } from '../client/http.js';
import { currentSignal } from './cancellation.js';
import { AgentFailed, WorkflowError } from './errors.js';

/** The delay in ms before retry number `retry` (1 for the first retry). */
export type Backoff = (retry: number) => number;

export const immediate: Backoff = () => 0;

export function fixedBackoff(ms: number): Backoff {
  return () => ms;
}

/** `initialMs`, then multiplied by `factor` per retry, capped at `maxMs`. */
export function exponentialBackoff({
  initialMs,
  factor = 2,
  maxMs = Number.POSITIVE_INFINITY,
}: {
  initialMs: number;
  factor?: number;
  maxMs?: number;
}): Backoff {
  return (retry) => Math.min(maxMs, initialMs * factor ** (retry - 1));
}

/** An agent's failure may pass on a new launch; a refusal, an exhausted allowance or a missed quorum will not. */
export function worthRetrying(error: unknown): boolean {
  return error instanceof AgentFailed && error.failure.type !== 'Skipped';
}

export interface RetryOptions {
  /** Retries after the first attempt (default 1): up to `1 + maxRetry` attempts. */
  readonly maxRetry?: number;
  readonly backoff?: Backoff;
  /** Consulted for workflow errors only; anything else is never retried. */
  readonly retriable?: (error: WorkflowError) => boolean;
  /** Cancels the wait between attempts (default: the enclosing group's signal). */
  readonly signal?: AbortSignal;
}

/**
 * Run `step` until it succeeds, up to `1 + maxRetry` times; each attempt is a full launch
 * (slot, allowance, tokens, journal entry). Cancellation and non-workflow errors are fatal.
 * Rejects with the last attempt's error.
 */
export async function retry<T>(
  step: (attempt: number) => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const { maxRetry = 1, backoff = immediate, retriable = worthRetrying } = options;
  const signal = options.signal ?? currentSignal();
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await step(attempt);
    } catch (error) {
      if (!(error instanceof WorkflowError) || !retriable(error) || attempt > maxRetry) throw error;
    }
    const delay = backoff(attempt);
    if (delay > 0) await sleep(delay, signal);
    signal?.throwIfAborted();
  }
}
