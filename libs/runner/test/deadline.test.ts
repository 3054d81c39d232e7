import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { contractRun, type LaunchControl } from '../src/index.js';
import { elapsed, result, scratch, sh, USAGE, writeResult } from './helpers.js';

const DEADLINE = 300;
const run = (
  launch: { command: string; args: string[] },
  more: Partial<Parameters<typeof contractRun>[0]> = {},
) =>
  elapsed(() =>
    contractRun({
      ...launch,
      input: { query: 'q' },
      kind: 'probe',
      id: 'test-1',
      deadlineMs: DEADLINE,
      ...more,
    }),
  );

// `read rest` returns at stdin EOF: the child waits for the parent's cancel, then acts.
const onCancel = (then: string) => `read request; read rest; ${then}`;

describe('contractRun: the deadline and the grace window', () => {
  it('a completed result written in the grace window counts, with its exit code', async () => {
    const doc = result('test-1', 'completed', { output: 'late but whole', usage: USAGE });
    const [classified, took] = await run(sh(onCancel(`${writeResult(doc)}; exit 4`)), {
      cancelGraceMs: 3_000,
    });
    expect(classified).toEqual({
      terminal: { type: 'captured' },
      report: 'late but whole',
      stepsUsed: 0,
      promptTokens: 7,
      completionTokens: 3,
      usage: USAGE,
      exitCode: 4,
    });
    expect(took).toBeGreaterThanOrEqual(DEADLINE - 5);
    expect(took).toBeLessThan(2_500);
  });

  it('a non-completed result written in the grace window is timed_out with its usage kept', async () => {
    const doc = result('test-1', 'interrupted', {
      reason: 'the parent closed stdin',
      usage: USAGE,
      steps: 2,
    });
    const [classified] = await run(sh(onCancel(writeResult(doc))), { cancelGraceMs: 3_000 });
    expect(classified).toEqual({
      terminal: { type: 'timed_out' },
      stepsUsed: 2,
      promptTokens: 7,
      completionTokens: 3,
      usage: USAGE,
      exitCode: 0,
    });
  });

  it('a malformed file written in the grace window is timed_out, unaccounted as malformed', async () => {
    const [classified] = await run(sh(onCancel(writeResult('{"version":1'))), { cancelGraceMs: 3_000 });
    expect(classified.terminal).toEqual({ type: 'timed_out' });
    expect(classified.unaccounted).toBe('the result file is malformed');
  });

  it('a result written after the grace window does not count: the child is killed first', async () => {
    const doc = result('test-1', 'completed', { output: 'too late' });
    const [classified, took] = await run(sh(onCancel(`exec >&-; sleep 1; ${writeResult(doc)}`)), {
      cancelGraceMs: 300,
    });
    expect(classified).toEqual({
      terminal: { type: 'timed_out' },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: 'the child left no result',
    });
    expect(took).toBeLessThan(DEADLINE + 300 + 700);
  });

  it('one grace window bounds the stdout drain and the exit wait together', async () => {
    // On cancel the child keeps stdout open for 700 ms, then closes it and lingers. Separate
    // windows (drain, then a 1000 ms exit wait) would take ~1700 ms after the deadline.
    const [classified, took] = await run(sh(onCancel('sleep 0.7; exec >&-; sleep 5')), {
      cancelGraceMs: 1_000,
    });
    expect(classified.terminal).toEqual({ type: 'timed_out' });
    expect(classified.exitCode).toBeUndefined();
    expect(took).toBeGreaterThanOrEqual(DEADLINE + 1_000 - 10);
    expect(took).toBeLessThan(DEADLINE + 1_550);
  });

  it('a child that ignores the cancel and holds stdout is killed at the end of the window', async () => {
    const [classified, took] = await run(sh('read request; trap "" INT TERM; sleep 10'), {
      cancelGraceMs: 200,
    });
    expect(classified.terminal).toEqual({ type: 'timed_out' });
    expect(classified.unaccounted).toBe('the child left no result');
    expect(took).toBeLessThan(DEADLINE + 200 + 1_000);
  });

  it('a child that never reads stdin, sent a 1 MiB request, ends timed_out instead of hanging', async () => {
    const [classified, took] = await run(sh('sleep 10'), { input: 'x'.repeat(1 << 20), cancelGraceMs: 200 });
    expect(classified).toEqual({
      terminal: { type: 'timed_out' },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: 'the child left no result',
    });
    expect(took).toBeLessThan(DEADLINE + 200 + 1_000);
  });

  it('the deadline covers the request write: a slow reader past it is timed out', async () => {
    // Reads one byte at a time, far too slowly for 1 MiB in 300 ms.
    const [classified] = await run(sh('while dd bs=1 count=1 2>/dev/null >/dev/null; do sleep 0.05; done'), {
      input: 'x'.repeat(1 << 20),
      cancelGraceMs: 200,
    });
    expect(classified.terminal).toEqual({ type: 'timed_out' });
  });
});

describe('contractRun: a child that exits before reading its request', () => {
  it('never crashes the runner: a broken pipe is a stream failure without an exit code', async () => {
    const [classified] = await run(sh('exit 0'), { input: 'x'.repeat(1 << 20), deadlineMs: 5_000 });
    expect(classified).toEqual({
      terminal: { type: 'failed', reason: 'child stream failed: write EPIPE' },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: 'the child left no result',
    });
  });

  it('a valid result file still wins over the broken pipe', async () => {
    const doc = result('test-1', 'completed', { output: 'wrote first', usage: USAGE });
    const [classified] = await run(sh(writeResult(doc)), { input: 'x'.repeat(1 << 20), deadlineMs: 5_000 });
    expect(classified.terminal).toEqual({ type: 'captured' });
    expect(classified.report).toBe('wrote first');
    expect(classified.exitCode).toBeUndefined();
  });

  it('with a small request either path is allowed, and the runner survives many of them', async () => {
    const runs = await Promise.all(
      Array.from({ length: 20 }, () =>
        run(sh('exit 0'), { deadlineMs: 5_000 }).then(([classified]) => classified),
      ),
    );
    for (const classified of runs) {
      expect(classified.terminal.type).toBe('failed');
      expect(['child stream failed: write EPIPE', 'the child exited 0 without writing a result']).toContain(
        classified.terminal.reason,
      );
    }
  });
});

describe('contractRun: pausing the clock', () => {
  it('a paused child is not charged for the time it was stopped', async () => {
    const doc = result('test-1', 'completed', { output: 'resumed' });
    const [classified, took] = await run(sh(`read request; sleep 0.2; ${writeResult(doc)}`), {
      deadlineMs: 500,
      onSpawn: (control) => {
        control.pause();
        expect(control.paused).toBe(true);
        setTimeout(() => control.resume(), 700);
      },
    });
    expect(classified.terminal).toEqual({ type: 'captured' });
    expect(classified.report).toBe('resumed');
    // Stopped until the resume at 700 ms, past its 500 ms deadline, yet captured. (Its 200 ms of
    // work may run before the pause lands when the pause travels through a busy spawner.)
    expect(took).toBeGreaterThanOrEqual(700 - 10);
  });

  it('stops the whole group: a grandchild makes no progress while paused', async () => {
    const side = await scratch();
    const marker = side.file('progress');
    const doc = result('test-1', 'completed', { output: 'done' });
    let control: LaunchControl | undefined;
    // The grandchild says it is there, then makes its progress a second later: time enough for the
    // pause to reach it even through a spawner on a loaded host.
    const forked = `${marker}.forked`;
    const script = `read request; (touch "$2.forked"; sleep 1; touch "$2") & wait; ${writeResult(doc)}`;
    const running = run(sh(script, marker), {
      deadlineMs: 5_000,
      onSpawn: (spawned) => {
        control = spawned;
      },
    });
    try {
      for (const until = Date.now() + 10_000; !existsSync(forked) && Date.now() < until; )
        await new Promise((resolve) => setTimeout(resolve, 5));
      expect(existsSync(forked)).toBe(true);
      control?.pause();
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(existsSync(marker)).toBe(false);
      control?.resume();
      const [classified] = await running;
      expect(classified.report).toBe('done');
      expect(existsSync(marker)).toBe(true);
      expect(control?.signal('SIGCONT')).toBe(false); // inert once the run is over
    } finally {
      await side.cleanup();
    }
  });
});

describe('contractRun: the caller’s graceful cancel (LaunchControl.cancel)', () => {
  it('closes stdin now; an interrupted result is classified on its merits, not timed_out', async () => {
    const doc = result('test-1', 'interrupted', {
      reason: 'the parent closed stdin',
      usage: USAGE,
      steps: 1,
    });
    const [classified, took] = await run(sh(onCancel(writeResult(doc))), {
      deadlineMs: 10_000,
      onSpawn: (control) => {
        setTimeout(() => control.cancel(), 150);
      },
    });
    expect(classified).toEqual({
      terminal: { type: 'failed', reason: 'interrupted: the parent closed stdin' },
      stepsUsed: 1,
      promptTokens: 7,
      completionTokens: 3,
      usage: USAGE,
      exitCode: 0,
    });
    expect(took).toBeLessThan(2_000);
  });

  it('works when called at once from onSpawn, and a completed result still counts', async () => {
    const doc = result('test-1', 'completed', { output: 'finished on cancel' });
    const [classified] = await run(sh(onCancel(writeResult(doc))), {
      deadlineMs: 10_000,
      onSpawn: (control) => control.cancel(),
    });
    expect(classified.terminal).toEqual({ type: 'captured' });
    expect(classified.report).toBe('finished on cancel');
  });

  it('a child that ignores it is killed at the end of the grace window', async () => {
    const [classified, took] = await run(sh('read request; sleep 10'), {
      deadlineMs: 10_000,
      cancelGraceMs: 300,
      onSpawn: (control) => {
        setTimeout(() => control.cancel(), 100);
      },
    });
    expect(classified).toEqual({
      terminal: { type: 'failed', reason: 'the child did not exit in time without writing a result' },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: 'the child left no result',
    });
    expect(took).toBeGreaterThanOrEqual(100 + 300 - 10);
    expect(took).toBeLessThan(100 + 300 + 1_000);
  });
});
