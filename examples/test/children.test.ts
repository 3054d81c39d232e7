import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ContractRunOptions, contractRun } from '@libos/runner';
import { describe, expect, it } from 'vitest';
import {
  SH_CHILDREN,
  shChildLaunch,
  shChildren,
  TS_CHILDREN,
  tsChildLaunch,
  tsChildren,
} from '../src/index.js';

const run = (launch: { command: string; args: string[] }, more: Partial<ContractRunOptions> = {}) =>
  contractRun({ ...launch, input: { query: 'q' }, kind: 'echo', id: 'ex-1', deadlineMs: 10_000, ...more });

const ZERO_USAGE = {
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  prompt_cache_hit_tokens: 0,
  prompt_cache_miss_tokens: 0,
};

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
}

describe('the path map', () => {
  it('names existing files for every child', () => {
    for (const name of SH_CHILDREN) expect(existsSync(shChildren[name])).toBe(true);
    for (const name of TS_CHILDREN) expect(existsSync(tsChildren[name].source)).toBe(true);
    expect(tsChildren.echo.built).toMatch(/examples\/dist\/children\/echo\.js$/);
    expect(tsChildLaunch('echo', 'built').args).toEqual([tsChildren.echo.built, '{result_file}']);
  });
});

describe('shell children', () => {
  it('echo completes with the exact request, spending nothing', async () => {
    const classified = await run(shChildLaunch('echo'), { maxSteps: 3 });
    expect(classified.terminal).toEqual({ type: 'captured' });
    expect(JSON.stringify(classified.report)).toBe(
      '{"request":{"version":1,"request_id":"ex-1","kind":"echo","input":{"query":"q"},"limits":{"max_steps":3}}}',
    );
    expect(classified.usage).toEqual(ZERO_USAGE);
    expect(classified.unaccounted).toBeUndefined();
  });

  it('sleep-then-complete completes after its sleep', async () => {
    const classified = await run(shChildLaunch('sleep-then-complete', '0.1'));
    expect(classified.report).toEqual({ slept: '0.1' });
  });

  it('no-report finishes without a report', async () => {
    expect((await run(shChildLaunch('no-report'))).terminal).toEqual({ type: 'no_report' });
  });

  it('cancel-aware reports interrupted on the deadline’s stdin EOF: timed_out, usage kept', async () => {
    const classified = await run(shChildLaunch('cancel-aware'), { deadlineMs: 300 });
    expect(classified).toMatchObject({
      terminal: { type: 'timed_out' },
      promptTokens: 1,
      stepsUsed: 1,
      exitCode: 0,
    });
    expect(classified.unaccounted).toBeUndefined();
  });

  it('never-reads-stdin ends timed_out', async () => {
    const classified = await run(shChildLaunch('never-reads-stdin'), { deadlineMs: 300, cancelGraceMs: 200 });
    expect(classified.terminal).toEqual({ type: 'timed_out' });
    expect(classified.unaccounted).toBe('the child left no result');
  });

  it('exits-without-result names its exit code', async () => {
    const classified = await run(shChildLaunch('exits-without-result', '3'));
    expect(classified.terminal).toEqual({
      type: 'failed',
      reason: 'the child exited 3 without writing a result',
    });
  });

  it('spawns-grandchildren leaves nothing behind after a timeout', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'examples-test-'));
    try {
      const pidsFile = join(dir, 'pids');
      const classified = await run(shChildLaunch('spawns-grandchildren', pidsFile), {
        deadlineMs: 300,
        cancelGraceMs: 200,
      });
      expect(classified.terminal).toEqual({ type: 'timed_out' });
      // `uid:pid` lines; run here without a sandbox, the pid is the host's.
      const pids = (await readFile(pidsFile, 'utf8'))
        .trim()
        .split('\n')
        .map((line) => Number(line.split(':')[1]));
      expect(pids).toHaveLength(3);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(pids.filter(alive)).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('stdout-flood is drained and completes', async () => {
    const classified = await run(shChildLaunch('stdout-flood', String(5 * 1024 * 1024)));
    expect(classified.report).toBe('flooded');
  });
});

describe('TypeScript children (from source)', () => {
  it('echo returns the input', async () => {
    const classified = await run(tsChildLaunch('echo', 'source'), { input: { query: 'hello', hints: 'h' } });
    expect(classified).toEqual({
      terminal: { type: 'captured' },
      report: { query: 'hello', hints: 'h' },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      usage: ZERO_USAGE,
      exitCode: 0,
    });
  });

  it('sleep completes after input.ms', async () => {
    const classified = await run(tsChildLaunch('sleep', 'source'), { input: { ms: 50 } });
    expect(classified.terminal).toEqual({ type: 'captured' });
    expect(classified.report).toEqual({ slept: 50 });
    expect(classified.stepsUsed).toBe(1);
  });

  it('sleep honours the cancel: interrupted with usage, so timed_out with its usage kept', async () => {
    const classified = await run(tsChildLaunch('sleep', 'source'), {
      input: { ms: 60_000 },
      deadlineMs: 1_500,
    });
    expect(classified.terminal).toEqual({ type: 'timed_out' });
    expect(classified.stepsUsed).toBe(1);
    expect(classified.usage).toBeDefined();
    expect(classified.unaccounted).toBeUndefined();
    expect(classified.exitCode).toBe(0);
  });

  it('sleep refuses a bad input with a failed result', async () => {
    const classified = await run(tsChildLaunch('sleep', 'source'), { input: { ms: 'soon' } });
    expect(classified.terminal).toEqual({
      type: 'failed',
      reason: '`input.ms` must be a whole number of ms',
    });
  });

  it('usage reports the usage, price and steps it is asked for', async () => {
    const classified = await run(tsChildLaunch('usage', 'source'), {
      input: { prompt_tokens: 100, completion_tokens: 20, cache_hit_tokens: 40, cost_usd: 0.01, steps: 4 },
    });
    expect(classified).toMatchObject({
      terminal: { type: 'captured' },
      stepsUsed: 4,
      promptTokens: 100,
      completionTokens: 20,
      costUsd: 0.01,
      usage: {
        prompt_tokens: 100,
        completion_tokens: 20,
        total_tokens: 120,
        prompt_cache_hit_tokens: 40,
        prompt_cache_miss_tokens: 60,
        cost_usd: 0.01,
      },
    });
    const failed = await run(tsChildLaunch('usage', 'source'), { input: { status: 'aborted' } });
    expect(failed).toMatchObject({
      terminal: { type: 'failed', reason: 'aborted: asked to end aborted' },
      promptTokens: 7,
    });
  });
});
