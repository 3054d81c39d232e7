import { describe, expect, it } from 'vitest';
import { classifyLaunch, type LaunchEvidence, TEXTS, UNACCOUNTED } from '../src/index.js';

const USAGE = {
  prompt_tokens: 7,
  completion_tokens: 3,
  total_tokens: 10,
  prompt_cache_hit_tokens: 0,
  prompt_cache_miss_tokens: 7,
};

type Launched = Extract<LaunchEvidence, { launched: true }>;
const launched = (doc: object | string | undefined, more: Partial<Launched> = {}): Launched => ({
  launched: true,
  requestId: 'test-1',
  timedOut: false,
  file:
    doc === undefined
      ? { kind: 'missing' }
      : { kind: 'contents', text: typeof doc === 'string' ? doc : JSON.stringify(doc) },
  ...more,
});
const result = (status: string, fields: object = {}) => ({
  version: 1,
  request_id: 'test-1',
  status,
  ...fields,
});

describe('classifyLaunch: not launched', () => {
  it('is a failure with zero counters, nothing unaccounted and no exit code', () => {
    expect(classifyLaunch({ launched: false, failure: TEXTS.argvLacksPlaceholder })).toEqual({
      terminal: {
        type: 'failed',
        reason: 'the argv must name {result_file}, where the child writes its result',
      },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
    });
    expect(classifyLaunch({ launched: false }).terminal).toEqual({
      type: 'failed',
      reason: 'the child was not launched',
    });
  });

  it('has the reference texts for each launch failure', () => {
    expect(TEXTS.noDirectory('EACCES')).toBe('no directory for the result file: EACCES');
    expect(TEXTS.pipesUnavailable('EMFILE')).toBe('child pipes unavailable: EMFILE');
    expect(TEXTS.spawnFailed('spawn x ENOENT')).toBe('child spawn failed: spawn x ENOENT');
    expect(TEXTS.streamFailed('write EPIPE')).toBe('child stream failed: write EPIPE');
    expect(TEXTS.runnerFailed('boom')).toBe('child runner failed: boom');
  });
});

describe('classifyLaunch: no usable result', () => {
  it('a missing file after an exit names the exit code', () => {
    expect(classifyLaunch(launched(undefined, { exitCode: 0 }))).toEqual({
      terminal: { type: 'failed', reason: 'the child exited 0 without writing a result' },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: 'the child left no result',
      exitCode: 0,
    });
    expect(classifyLaunch(launched(undefined, { exitCode: 3 })).terminal.reason).toContain('exited 3');
  });

  it('a missing file without an exit status says the child did not exit in time', () => {
    const classified = classifyLaunch(launched(undefined));
    expect(classified.terminal.reason).toBe('the child did not exit in time without writing a result');
    expect('exitCode' in classified).toBe(false);
  });

  it('an unreadable file', () => {
    const classified = classifyLaunch({
      ...launched(undefined),
      file: { kind: 'unreadable', error: 'EISDIR' },
    });
    expect(classified.terminal).toEqual({ type: 'failed', reason: 'the result file is unreadable: EISDIR' });
    expect(classified.unaccounted).toBe('the result file is unreadable');
  });

  it('a malformed file, with zero counters even if usage was present', () => {
    const classified = classifyLaunch(
      launched(result('finished', { usage: USAGE, steps: 3 }), { exitCode: 0 }),
    );
    expect(classified).toEqual({
      terminal: { type: 'failed', reason: 'malformed result file: unknown status finished' },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: 'the result file is malformed',
      exitCode: 0,
    });
  });

  it('the deadline wins over a runner failure, which wins over the file problem', () => {
    const stream = TEXTS.streamFailed('write EPIPE');
    expect(classifyLaunch(launched(undefined, { timedOut: true, runnerFailure: stream }))).toEqual({
      terminal: { type: 'timed_out' },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: UNACCOUNTED.noResult,
    });
    expect(classifyLaunch(launched(undefined, { runnerFailure: stream }))).toEqual({
      terminal: { type: 'failed', reason: 'child stream failed: write EPIPE' },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: 'the child left no result',
    });
    expect(classifyLaunch(launched('{', { timedOut: true })).unaccounted).toBe(
      'the result file is malformed',
    );
  });
});

describe('classifyLaunch: a valid result', () => {
  it('completed is captured with its usage, cost and steps, whatever the exit code', () => {
    expect(
      classifyLaunch(
        launched(result('completed', { output: { a: 1 }, usage: { ...USAGE, cost_usd: 0.25 }, steps: 2 }), {
          exitCode: 4,
        }),
      ),
    ).toEqual({
      terminal: { type: 'captured' },
      report: { a: 1 },
      stepsUsed: 2,
      promptTokens: 7,
      completionTokens: 3,
      costUsd: 0.25,
      usage: { ...USAGE, cost_usd: 0.25 },
      exitCode: 4,
    });
  });

  it('completed with output null has an own null report', () => {
    const classified = classifyLaunch(launched(result('completed', { output: null, usage: USAGE })));
    expect(Object.hasOwn(classified, 'report')).toBe(true);
    expect(classified.report).toBeNull();
    expect(classified.terminal).toEqual({ type: 'captured' });
  });

  it('completed wins over the deadline and over a stream failure', () => {
    const doc = result('completed', { output: 'late', usage: USAGE });
    const classified = classifyLaunch(
      launched(doc, { timedOut: true, runnerFailure: TEXTS.streamFailed('x'), exitCode: 4 }),
    );
    expect(classified.terminal).toEqual({ type: 'captured' });
    expect(classified.report).toBe('late');
    expect(classified.exitCode).toBe(4);
  });

  it('a non-completed result after the deadline is timed_out with its usage kept', () => {
    expect(
      classifyLaunch(
        launched(result('interrupted', { reason: 'the parent closed stdin', usage: USAGE, steps: 1 }), {
          timedOut: true,
        }),
      ),
    ).toEqual({
      terminal: { type: 'timed_out' },
      stepsUsed: 1,
      promptTokens: 7,
      completionTokens: 3,
      usage: USAGE,
    });
  });

  it.each([
    ['no_report', {}, { type: 'no_report' }],
    ['max_steps_exhausted', {}, { type: 'max_steps' }],
    ['context_yield', { reason: 'ceiling' }, { type: 'context_yield' }],
    ['aborted', { reason: 'user' }, { type: 'failed', reason: 'aborted: user' }],
    [
      'interrupted',
      { reason: 'the parent closed stdin' },
      { type: 'failed', reason: 'interrupted: the parent closed stdin' },
    ],
    ['failed', { reason: 'no key' }, { type: 'failed', reason: 'no key' }],
  ])('%s maps to its terminal, without a report', (status, fields, terminal) => {
    const classified = classifyLaunch(launched(result(status, { ...fields, usage: USAGE }), { exitCode: 0 }));
    expect(classified.terminal).toEqual(terminal);
    expect(Object.hasOwn(classified, 'report')).toBe(false);
    expect(classified.promptTokens).toBe(7);
    expect(classified.unaccounted).toBeUndefined();
  });

  it('keeps the reason a context_yield result gave beside the terminal, not in it', () => {
    const classified = classifyLaunch(launched(result('context_yield', { reason: 'ceiling', usage: USAGE })));
    expect(classified.terminal).toEqual({ type: 'context_yield' });
    expect(classified.yieldReason).toBe('ceiling');
  });

  it('a result without usage has zero tokens, its steps, and says so', () => {
    expect(classifyLaunch(launched(result('no_report', { steps: 4 }), { exitCode: 0 }))).toEqual({
      terminal: { type: 'no_report' },
      stepsUsed: 4,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: "the child's result carries no usage",
      exitCode: 0,
    });
    expect(classifyLaunch(launched(result('completed', { output: 1 }))).unaccounted).toBe(
      UNACCOUNTED.noUsage,
    );
  });

  it('an unstated price stays unknown, never free', () => {
    expect('costUsd' in classifyLaunch(launched(result('completed', { output: 1, usage: USAGE })))).toBe(
      false,
    );
  });

  it('refuses another request’s result', () => {
    const classified = classifyLaunch({
      ...launched(result('completed', { output: 1 })),
      requestId: 'test-2',
    });
    expect(classified.terminal.reason).toBe('malformed result file: answers request test-1, not test-2');
  });
});
