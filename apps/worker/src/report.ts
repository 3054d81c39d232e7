import { type Kernel, KernelError } from '@libos/kernel';
import type { CompleteResult, Completion } from '@libos/protocol';
import type { Logger } from 'pino';

/** Whether a kernel call may succeed if tried again (Redis unreachable or failing over). */
export function isTransient(error: unknown): boolean {
  return !(error instanceof KernelError) || error.code === 'unavailable';
}

export interface RetryOptions {
  /** Give up once this much time has passed since the first try. */
  withinMs: number;
  log: Logger;
  what: string;
}

/**
 * Runs `call` until it succeeds, fails for good (a refusal), or `withinMs` has passed, with
 * exponential backoff (50 ms doubling to 1 s) between transient failures. Refusals and the last
 * transient failure are rethrown.
 */
export async function withRetry<T>(call: () => Promise<T>, options: RetryOptions): Promise<T> {
  const until = performance.now() + options.withinMs;
  let backoff = 50;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (!isTransient(error) || performance.now() + backoff > until) throw error;
      options.log.warn(
        { err: error instanceof Error ? error.message : String(error) },
        `${options.what}: retrying`,
      );
      await new Promise((resolve) => setTimeout(resolve, backoff));
      backoff = Math.min(backoff * 2, 1_000);
    }
  }
}

/**
 * Reports an attempt's ending with its fence. Transient failures are retried for a few lease
 * periods (the lease is still renewed meanwhile, so the attempt stays ours); a refusal, e.g. the
 * attempt was superseded after its lease expired, is logged and dropped: the kernel already
 * settled that attempt. Returns undefined when nothing was recorded.
 */
export async function reportCompletion(
  kernel: Kernel,
  attempt: { pid: string; attempt: number; fence: string },
  completion: Completion,
  options: { leaseMs: number; log: Logger },
): Promise<CompleteResult | undefined> {
  const { pid, fence } = attempt;
  try {
    const done = await withRetry(() => kernel.worker.complete(pid, attempt.attempt, fence, completion), {
      withinMs: 3 * options.leaseMs,
      log: options.log,
      what: 'completion',
    });
    options.log.debug(
      { status: done.status, terminal: completion.terminal.type, reason: completion.terminal.reason },
      'attempt completed',
    );
    return done;
  } catch (error) {
    if (error instanceof KernelError && error.reason === 'terminal') {
      // Only this attempt's fence reaches here: a call whose answer was lost had landed.
      options.log.info({ err: error.message }, 'completion already recorded');
      return undefined;
    }
    if (error instanceof KernelError && !isTransient(error)) {
      options.log.warn(
        { code: error.code, reason: error.reason, err: error.message },
        'completion refused; dropped',
      );
    } else {
      options.log.error(
        { err: error instanceof Error ? error.message : String(error) },
        'completion could not be reported; the reaper will recover the attempt when its lease expires',
      );
    }
    return undefined;
  }
}
