import { describe, expect, it } from 'vitest';
import { attemptOf, failureOf, NO_USAGE } from '../src/workflow/cluster-runner.js';

// The whole runner runs against a real cluster in test/e2e/cluster-runner.test.ts (it needs a
// coordinator and workers, which this package must not depend on); here, the outcome mapping.
describe('clusterRunner outcome mapping', () => {
  const base = { attempt_id: 'pabcd.1:2' };

  it('names each kernel outcome as contractRunner names the same terminal', () => {
    expect(failureOf({ ...base, type: 'no_report' })).toEqual({ type: 'NoReport' });
    expect(failureOf({ ...base, type: 'max_steps_exhausted' })).toEqual({ type: 'MaxSteps' });
    expect(failureOf({ ...base, type: 'context_yield' })).toEqual({ type: 'ContextYield' });
    expect(failureOf({ ...base, type: 'timed_out', reason: 'ignored' })).toEqual({ type: 'TimedOut' });
    expect(failureOf({ ...base, type: 'failed', reason: 'aborted: no' })).toEqual({
      type: 'Failed',
      reason: 'aborted: no',
    });
    expect(failureOf({ ...base, type: 'killed', reason: 'cancel' })).toEqual({
      type: 'Failed',
      reason: 'killed: cancel',
    });
    expect(failureOf({ ...base, type: 'killed' })).toEqual({ type: 'Failed', reason: 'killed' });
  });

  it('takes the attempt id, steps, tokens, price and unaccounted reason from the outcome', () => {
    const usage = { prompt_tokens: 11, completion_tokens: 4, steps: 3, wall_ms: 120 };
    expect(attemptOf({ ...base, type: 'completed', usage: { ...usage, cost_usd: 0 }, steps: 3 })).toEqual({
      attemptId: 'pabcd.1:2',
      stepsUsed: 3,
      promptTokens: 11,
      completionTokens: 4,
      costUsd: 0, // a stated price of zero is kept: unknown is absent, never free
    });
    expect(
      attemptOf({ ...base, type: 'failed', usage, unaccounted: 'the child left no result' }),
    ).toMatchObject({ stepsUsed: 3, unaccounted: 'the child left no result' });
    // Killed before it ever ran, or ended by its own process_exit: the kernel charged nothing here.
    expect(attemptOf({ ...base, type: 'killed', reason: 'cancel' })).toEqual({
      attemptId: 'pabcd.1:2',
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: NO_USAGE,
    });
  });
});
