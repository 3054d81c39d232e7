import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AgentFailed,
  AgentFailure,
  AgentOutcome,
  endingOf,
  fanOut,
  HandoffError,
  hostedContext,
  WORKFLOW_HOST,
} from '../src/index.js';
import { shChild } from './workflow-support.js';

// `hosted` (reference §4): the WORKFLOW_HOST handoff, version 2, and the runner it gives.

const env = (doc: unknown) => ({ [WORKFLOW_HOST]: typeof doc === 'string' ? doc : JSON.stringify(doc) });

/** A child that answers with its argv after the result path and its request line. */
const ECHO = shChild(
  `printf '{"version":1,"request_id":"%s","status":"completed","output":{"argv":"%s %s","request":%s},"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":5},"steps":1}' "$id" "$2" "$3" "$request" > "$1"\n`,
);

const handoff = (extra: Record<string, unknown> = {}) => ({
  v: 2,
  transport: 'result_file',
  exe: ECHO.command,
  child_args: [...ECHO.args, '{kind}', '{child}'],
  child_id: 'run7-sr-{n}',
  ids: [5, 2],
  ...extra,
});

describe('hostedContext', () => {
  it('is undefined when WORKFLOW_HOST is unset or blank: the program runs standalone', () => {
    expect(hostedContext({})).toBeUndefined();
    expect(hostedContext({ [WORKFLOW_HOST]: '  ' })).toBeUndefined();
  });

  const bad: [unknown, string][] = [
    ['{', 'not JSON: '],
    [[1], 'not a JSON object'],
    [{ transport: 'result_file' }, 'no handoff version `v`'],
    [{ v: 1 }, 'unsupported handoff version 1; this release reads version 2'],
    [{ v: '2' }, 'unsupported handoff version "2"; this release reads version 2'],
    [{ v: 2 }, 'no `transport`'],
    [{ v: 2, transport: 'stdout' }, 'unsupported transport "stdout"; this release reads "result_file"'],
    [handoff({ exe: '' }), '`exe` must be a non-empty string'],
    [handoff({ child_args: [] }), '`child_args` must be a non-empty array of strings'],
    [handoff({ child_args: ['x', 3] }), '`child_args` must be a non-empty array of strings'],
    [handoff({ child_args: ['x', '{kind}'] }), '`child_args` must name {result_file}'],
    [handoff({ child_id: 'sr' }), '`child_id` must be a string containing {n}'],
    ...[undefined, [1, 0], [1], [1.5, 2], [0, 4]].map((ids): [unknown, string] => [
      handoff({ ids }),
      '`ids` must be [first, count], both positive integers',
    ]),
    [handoff({ journal: 3 }), '`journal` must be a string'],
    [handoff({ events: false }), '`events` must be a string'],
    [handoff({ cwd: [] }), '`cwd` must be a string'],
    [handoff({ deadline_ms: 0 }), '`deadline_ms` must be a positive integer'],
    [handoff({ deadline_ms: 1.5 }), '`deadline_ms` must be a positive integer'],
  ];
  it.each(bad.map(([doc, reason]) => [reason, doc] as const))('refuses with the reason %s', (reason, doc) => {
    let thrown: unknown;
    try {
      hostedContext(env(doc));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(HandoffError);
    const error = thrown as HandoffError;
    expect(error.reason.startsWith(reason)).toBe(true);
    if (!reason.endsWith(': ')) expect(error.reason).toBe(reason);
    expect(error.message).toBe(`unusable WORKFLOW_HOST handoff: ${error.reason}`);
  });

  it('reads the block, the optional paths (null and "" are absent), the deadline and host extensions', () => {
    const ctx = hostedContext(
      env(handoff({ journal: '', events: null, libos: { pid: 'p1' }, journal_x: null })),
    );
    expect(ctx?.childCapacity()).toBe(2);
    expect(ctx?.journalPath()).toBeUndefined();
    expect(ctx?.eventsPath()).toBeUndefined();
    expect(ctx?.deadlineMs()).toBe(600_000);
    expect(ctx?.extension('libos')).toEqual({ pid: 'p1' });
    expect(ctx?.extension('journal_x')).toBeNull();
    expect(ctx?.extension('missing')).toBeUndefined();
    expect(ctx?.extension('exe')).toBeUndefined();
  });
});

describe('the hosted runner', () => {
  it('names launches from the block, substitutes {kind} and {child}, reports to the sidecar, and skips past the block', async () => {
    const lines: [string | undefined, unknown][] = [];
    const ctx = hostedContext(env(handoff({ events: '/sidecar.jsonl' })));
    if (ctx === undefined) throw new Error('no context');
    const runner = ctx.runner({ emitLine: (path, line) => void lines.push([path, JSON.parse(line)]) });
    const call = (query: string) => ({ kind: 'scout', input: { query }, label: query, scope: '' });
    const first = await runner.run({ ...call('a'), maxSteps: 3 });
    expect(first).toMatchObject({
      type: 'Finished',
      value: {
        argv: 'scout run7-sr-5',
        request: { version: 1, request_id: 'run7-sr-5', kind: 'scout', limits: { max_steps: 3 } },
      },
      attempt: { attemptId: 'run7-sr-5', stepsUsed: 1, promptTokens: 5, completionTokens: 2 },
    });
    expect(await runner.run(call('b'))).toMatchObject({ attempt: { attemptId: 'run7-sr-6' } });
    // The block holds two: the third is refused without a launch or a sidecar line.
    expect(await runner.run(call('c'))).toEqual({ type: 'DidNotFinish', failure: { type: 'Skipped' } });
    expect(lines).toEqual([
      ['/sidecar.jsonl', { event: 'agent_started', child: 'run7-sr-5', kind: 'scout', label: 'a' }],
      [
        '/sidecar.jsonl',
        { event: 'agent_finished', child: 'run7-sr-5', status: 'captured', steps: 1, tokens: 7 },
      ],
      ['/sidecar.jsonl', { event: 'agent_started', child: 'run7-sr-6', kind: 'scout', label: 'b' }],
      [
        '/sidecar.jsonl',
        { event: 'agent_finished', child: 'run7-sr-6', status: 'captured', steps: 1, tokens: 7 },
      ],
    ]);
  });

  it('a cancelled launch: the sidecar says cancelled with zero counters, and the cancellation propagates', async () => {
    const lines: unknown[] = [];
    const forever = shChild('sleep 30\n');
    const ctx = hostedContext(env(handoff({ exe: forever.command, child_args: forever.args })));
    if (ctx === undefined) throw new Error('no context');
    const runner = ctx.runner({ emitLine: (_path, line) => void lines.push(JSON.parse(line)) });
    const controller = new AbortController();
    const running = runner.run({ kind: 'k', input: null, label: 'l', scope: '' }, controller.signal);
    while (lines.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    controller.abort(new Error('stop'));
    await expect(running).rejects.toThrow('the contract run was aborted');
    expect(lines[1]).toEqual({
      event: 'agent_finished',
      child: 'run7-sr-5',
      status: 'cancelled',
      steps: 0,
      tokens: 0,
      unaccounted: 'the launch was cancelled before its result was read',
    });
  });

  it('run(): a Workflow on the runner and the journal file, the sidecar appended to the events file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'libos-hosted-'));
    try {
      const journal = join(dir, 'journal.jsonl');
      const events = join(dir, 'events.jsonl');
      const ctx = hostedContext(env(handoff({ journal, events, ids: [1, 1] })));
      if (ctx === undefined) throw new Error('no context');
      const results = await ctx.run((wf) => fanOut(['x', 'y'], (q) => wf.agent({ prompt: q, kind: 'k' })));
      expect(results[0]).toMatchObject({ ok: true, value: { argv: 'k run7-sr-1' } });
      expect(results[1]).toMatchObject({ ok: false });
      const failed = (results[1] as { error: unknown }).error;
      expect(failed).toBeInstanceOf(AgentFailed);
      expect((failed as Error).message).toBe("agent 'y' was skipped by the user");
      // Both outcomes are journaled (the Skipped one too); the sidecar saw one launch.
      expect((await readFile(journal, 'utf8')).trim().split('\n')).toHaveLength(2);
      expect((await readFile(events, 'utf8')).trim().split('\n')).toHaveLength(2);
      // A second generation replays the finished one and the skipped one, launching nothing.
      const again = hostedContext(env(handoff({ journal, events, ids: [1, 1] })));
      const replayed = await again?.run(async (wf) => {
        await fanOut(['x', 'y'], (q) => wf.agent({ prompt: q, kind: 'k' }));
        return wf.callsReplayed();
      });
      expect(replayed).toBe(2);
      expect((await readFile(events, 'utf8')).trim().split('\n')).toHaveLength(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the libos bridge (hosted-child.js): a libos child outcome as a contract ending', () => {
  const attempt = { attemptId: 'p1.1:1', stepsUsed: 3, promptTokens: 10, completionTokens: 4, costUsd: 0.5 };
  const usage = {
    prompt_tokens: 10,
    completion_tokens: 4,
    total_tokens: 14,
    prompt_cache_hit_tokens: 0,
    prompt_cache_miss_tokens: 10,
    cost_usd: 0.5,
  };
  it('maps each outcome with the usage the kernel charged; an unaccounted one carries no usage', () => {
    expect(endingOf(AgentOutcome.finished({ a: 1 }, attempt))).toEqual({
      status: 'completed',
      output: { a: 1 },
      usage,
      steps: 3,
    });
    expect(endingOf(AgentOutcome.didNotFinish(AgentFailure.NoReport, attempt))).toMatchObject({
      status: 'no_report',
    });
    expect(endingOf(AgentOutcome.didNotFinish(AgentFailure.MaxSteps, attempt))).toMatchObject({
      status: 'max_steps_exhausted',
    });
    expect(endingOf(AgentOutcome.didNotFinish(AgentFailure.ContextYield, attempt))).toMatchObject({
      status: 'context_yield',
    });
    expect(endingOf(AgentOutcome.didNotFinish(AgentFailure.TimedOut, attempt))).toMatchObject({
      status: 'failed',
      reason: 'the libos child timed out',
    });
    expect(endingOf(AgentOutcome.didNotFinish(AgentFailure.Failed('spawn refused: no'), undefined))).toEqual({
      status: 'failed',
      reason: 'spawn refused: no',
    });
    expect(
      endingOf(
        AgentOutcome.didNotFinish(AgentFailure.Failed('x'), { ...attempt, unaccounted: 'none recorded' }),
      ),
    ).toEqual({ status: 'failed', reason: 'x', steps: 3 });
  });
});
