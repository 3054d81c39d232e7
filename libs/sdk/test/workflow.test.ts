import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AgentFailed,
  AgentFailure,
  type AgentOutcome,
  brief,
  CallBudgetExhausted,
  type Journal,
  memoryJournal,
  Workflow,
} from '../src/index.js';
import {
  attemptOf,
  deferred,
  echoRunner,
  eventLog,
  ScriptedRunner,
  untilAborted,
} from './workflow-support.js';

describe('Workflow construction', () => {
  it('refuses a concurrency below 1 and a negative allowance with the reference texts', () => {
    const runner = echoRunner();
    expect(() => new Workflow({ runner, maxConcurrent: 0 })).toThrow(
      'Workflow: max_concurrent must be at least 1',
    );
    expect(() => new Workflow({ runner, maxCalls: -1 })).toThrow('Workflow: max_calls must not be negative');
    expect(() => new Workflow({ runner, maxCalls: 0 })).not.toThrow();
  });
});

describe('brief', () => {
  it('keeps the first line, cuts to 48 UTF-16 units without splitting a pair, and marks the cut', () => {
    expect(brief('ask one thing\nthen explain yourself')).toBe('ask one thing…');
    expect(brief(`${'x'.repeat(47)}🚀 and more`)).toBe(`${'x'.repeat(47)}…`);
    expect(brief('short')).toBe('short');
    expect(brief('y'.repeat(48))).toBe('y'.repeat(48));
    expect(brief('y'.repeat(49))).toBe(`${'y'.repeat(48)}…`);
    expect(brief(`${'x'.repeat(46)}🚀`)).toBe(`${'x'.repeat(46)}🚀`);
  });
});

describe('agent and agentCall', () => {
  it('sends {query} or {query, hints}, labels by brief(prompt), and forwards max steps and schema', async () => {
    const runner = echoRunner();
    const log = eventLog();
    const wf = new Workflow({ runner, onEvent: log.onEvent });
    expect(await wf.agent({ prompt: 'hello\nworld', kind: 'probe' })).toEqual({
      echo: { query: 'hello\nworld' },
    });
    await wf.agent({
      prompt: 'hi',
      kind: 'probe',
      hints: 'from a foreign engine',
      label: 'named',
      maxSteps: 7,
    });
    await wf.agentCall({ kind: 'k', input: [1], label: 'raw', schema: { type: 'object' } });
    await wf.agentCall({ kind: 'k', input: [2], label: 'null-schema', schema: null });
    expect(runner.calls).toEqual([
      { kind: 'probe', input: { query: 'hello\nworld' }, label: 'hello…', scope: '' },
      {
        kind: 'probe',
        input: { query: 'hi', hints: 'from a foreign engine' },
        label: 'named',
        maxSteps: 7,
        scope: '',
      },
      { kind: 'k', input: [1], label: 'raw', scope: '', schema: { type: 'object' } },
      { kind: 'k', input: [2], label: 'null-schema', scope: '' },
    ]);
    expect(Object.hasOwn(runner.calls[3] ?? {}, 'schema')).toBe(false);
    expect(log.text()).toEqual([
      'started hello…',
      'finished hello… Succeeded',
      'started named',
      'finished named Succeeded',
      'started raw',
      'finished raw Succeeded',
      'started null-schema',
      'finished null-schema Succeeded',
    ]);
  });

  it('accounts tokens of both arms, cost as a floor of stated prices, and counts live calls', async () => {
    const outcomes: AgentOutcome[] = [
      { type: 'Finished', value: 1, attempt: attemptOf('a', 100, 20, { costUsd: 0.25 }) },
      {
        type: 'DidNotFinish',
        failure: AgentFailure.TimedOut,
        attempt: attemptOf('b', 7, 3, { costUsd: 0.5 }),
      },
      { type: 'Finished', value: 2, attempt: attemptOf('c', 1, 1) }, // priced nothing: unknown, not free
      { type: 'DidNotFinish', failure: AgentFailure.Skipped }, // no attempt: nothing spent
    ];
    const runner = new ScriptedRunner(async (_call, _signal, n) => outcomes[n - 1] as AgentOutcome);
    const wf = new Workflow({ runner });
    await wf.agent({ prompt: 'a', kind: 'k' });
    await expect(wf.agent({ prompt: 'b', kind: 'k' })).rejects.toThrow("agent 'b' timed out");
    await wf.agent({ prompt: 'c', kind: 'k' });
    await expect(wf.agent({ prompt: 'd', kind: 'k' })).rejects.toThrow("agent 'd' was skipped by the user");
    expect(wf.callsMade()).toBe(4);
    expect(wf.callsReplayed()).toBe(0);
    expect(wf.tokensSpent()).toBe(132);
    expect(wf.costUsd()).toBe(0.75);
  });

  it('raises AgentFailed with the display text of every failure', async () => {
    const failures: [AgentFailure, string][] = [
      [AgentFailure.TimedOut, "agent 'x' timed out"],
      [AgentFailure.NoReport, "agent 'x' finished without a report"],
      [AgentFailure.MaxSteps, "agent 'x' exhausted its step ceiling"],
      [AgentFailure.ContextYield, "agent 'x' yielded at the context ceiling"],
      [AgentFailure.Skipped, "agent 'x' was skipped by the user"],
      [AgentFailure.Failed('boom'), "agent 'x' failed: boom"],
    ];
    for (const [failure, text] of failures) {
      const log = eventLog();
      const runner = new ScriptedRunner(async () => ({ type: 'DidNotFinish', failure }));
      const wf = new Workflow({ runner, onEvent: log.onEvent });
      const error = await wf.agent({ prompt: 'x', kind: 'k' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AgentFailed);
      expect((error as AgentFailed).message).toBe(text);
      expect((error as AgentFailed).failure).toEqual(failure);
      expect((error as AgentFailed).label).toBe('x');
      expect(log.text()).toEqual(['started x', 'finished x FailedAgent']);
    }
  });

  it('debits the allowance before the runner, so a refusing runner still spends a call', async () => {
    const log = eventLog();
    const runner = new ScriptedRunner(async () => ({ type: 'DidNotFinish', failure: AgentFailure.Skipped }));
    const wf = new Workflow({ runner, maxCalls: 2, onEvent: log.onEvent });
    await expect(wf.agent({ prompt: 'one', kind: 'k' })).rejects.toBeInstanceOf(AgentFailed);
    await expect(wf.agent({ prompt: 'two', kind: 'k' })).rejects.toBeInstanceOf(AgentFailed);
    const third = await wf.agent({ prompt: 'three', kind: 'k' }).catch((e: unknown) => e);
    expect(third).toBeInstanceOf(CallBudgetExhausted);
    expect((third as Error).message).toBe("launch allowance exhausted before agent 'three' could launch");
    expect(runner.calls).toHaveLength(2);
    expect(wf.callsMade()).toBe(2);
    // No events for the call the allowance stopped.
    expect(log.text()).toEqual([
      'started one',
      'finished one FailedAgent',
      'started two',
      'finished two FailedAgent',
    ]);
  });

  it('with maxCalls 0 only replays', async () => {
    const first = new Workflow({ runner: echoRunner(), journal: memoryJournal() });
    const journal = memoryJournal();
    const seed = new Workflow({ runner: echoRunner(), journal });
    await seed.agent({ prompt: 'known', kind: 'k' });
    await first.agent({ prompt: 'ignored', kind: 'k' });
    const runner = echoRunner();
    const wf = new Workflow({ runner, maxCalls: 0, journal: memoryJournal(journal.recorded()) });
    expect(await wf.agent({ prompt: 'known', kind: 'k' })).toEqual({ echo: { query: 'known' } });
    await expect(wf.agent({ prompt: 'new', kind: 'k' })).rejects.toBeInstanceOf(CallBudgetExhausted);
    expect(runner.calls).toHaveLength(0);
    expect(wf.callsMade()).toBe(0);
    expect(wf.callsReplayed()).toBe(1);
  });

  it('runs at most maxConcurrent live calls at once and counts in-flight calls', async () => {
    let inFlight = 0;
    let peak = 0;
    const gates = [deferred(), deferred(), deferred(), deferred(), deferred()];
    const runner = new ScriptedRunner(async (_call, _signal, n) => {
      inFlight += 1;
      peak = Math.max(peak, inFlight);
      await gates[n - 1]?.promise;
      inFlight -= 1;
      return { type: 'Finished', value: n, attempt: attemptOf(`a${n}`) };
    });
    const wf = new Workflow({ runner, maxConcurrent: 2 });
    const calls = [1, 2, 3, 4, 5].map((i) => wf.agent({ prompt: `p${i}`, kind: 'k' }));
    await new Promise((r) => setImmediate(r));
    expect(wf.callsMade()).toBe(2); // two in flight, three queued (not yet counted)
    for (const gate of gates) gate.resolve();
    expect(await Promise.all(calls)).toEqual([1, 2, 3, 4, 5]);
    expect(peak).toBe(2);
    expect(wf.callsMade()).toBe(5);
  });

  it('does not count a call cancelled while it queued for a slot', async () => {
    const gate = deferred();
    const log = eventLog();
    const runner = new ScriptedRunner(async (_call, _signal, n) => {
      await gate.promise;
      return { type: 'Finished', value: n, attempt: attemptOf(`a${n}`) };
    });
    const wf = new Workflow({ runner, maxConcurrent: 1, onEvent: log.onEvent });
    const running = wf.agent({ prompt: 'first', kind: 'k' });
    const controller = new AbortController();
    const queued = wf.agent({ prompt: 'second', kind: 'k', signal: controller.signal });
    controller.abort();
    await expect(queued).rejects.toMatchObject({ name: 'AbortError' });
    gate.resolve();
    expect(await running).toBe(1);
    expect(wf.callsMade()).toBe(1);
    expect(runner.calls.map((c) => c.label)).toEqual(['first']);
    expect(log.text()).toEqual(['started first', 'finished first Succeeded']);
  });

  it('captures the phase when the call is made, not when it launches', async () => {
    const gate = deferred();
    const log = eventLog();
    const journal = memoryJournal();
    const runner = new ScriptedRunner(async (_call, _signal, n) => {
      if (n === 1) await gate.promise;
      return { type: 'Finished', value: n, attempt: attemptOf(`a${n}`) };
    });
    const wf = new Workflow({ runner, maxConcurrent: 1, journal, onEvent: log.onEvent });
    wf.phase('gather');
    wf.log('two calls');
    const a = wf.agent({ prompt: 'a', kind: 'k' });
    const b = wf.agent({ prompt: 'b', kind: 'k' }); // queued behind a, made during "gather"
    await new Promise((r) => setImmediate(r));
    wf.phase('judge');
    gate.resolve();
    await Promise.all([a, b]);
    expect(log.text()).toEqual([
      'phase gather',
      'log two calls',
      'started a @gather',
      'phase judge',
      'finished a Succeeded',
      'started b @gather',
      'finished b Succeeded',
    ]);
    expect(journal.recorded().map((e) => e.phase)).toEqual(['gather', 'gather']);
    const entry = journal.recorded()[0];
    expect(entry?.startedAt).toBeTypeOf('number');
    expect((entry?.finishedAt ?? 0) >= (entry?.startedAt ?? 1)).toBe(true);
  });

  it('closes the bracket as Errored when the runner throws, and journals nothing', async () => {
    const log = eventLog();
    const journal = memoryJournal();
    const runner = new ScriptedRunner(async () => {
      throw new Error('engine bug');
    });
    const wf = new Workflow({ runner, journal, onEvent: log.onEvent });
    await expect(wf.agent({ prompt: 'x', kind: 'k' })).rejects.toThrow('engine bug');
    expect(log.text()).toEqual(['started x', 'finished x Errored']);
    expect(journal.recorded()).toEqual([]);
    expect(wf.callsMade()).toBe(1);
  });

  it('closes the bracket as Errored when the journal append fails, with the tokens already charged', async () => {
    const log = eventLog();
    const inner = memoryJournal();
    const failing: Journal = {
      claim: (call) => inner.claim(call),
      prior: () => inner.prior(),
      recorded: () => inner.recorded(),
      append: async () => {
        throw new Error('disk full');
      },
    };
    const wf = new Workflow({ runner: echoRunner(), journal: failing, onEvent: log.onEvent });
    await expect(wf.agent({ prompt: 'x', kind: 'k' })).rejects.toThrow('disk full');
    expect(log.text()).toEqual(['started x', 'finished x Errored']);
    expect(wf.tokensSpent()).toBe(15);
  });

  it('closes the bracket as Interrupted when cancelled mid-run, and journals nothing', async () => {
    const log = eventLog();
    const journal = memoryJournal();
    const started = deferred();
    const runner = new ScriptedRunner(async (_call, signal) => {
      started.resolve();
      return untilAborted(signal);
    });
    const wf = new Workflow({ runner, journal, onEvent: log.onEvent });
    const controller = new AbortController();
    const call = wf.agent({ prompt: 'x', kind: 'k', signal: controller.signal });
    await started.promise;
    controller.abort();
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    expect(log.text()).toEqual(['started x', 'finished x Interrupted']);
    expect(journal.recorded()).toEqual([]);
  });

  it('treats a report that is not JSON as an engine bug, never journaling it', async () => {
    const journal = memoryJournal();
    const runner = new ScriptedRunner(async () => ({
      type: 'Finished',
      value: undefined as unknown as null,
      attempt: attemptOf('a'),
    }));
    const wf = new Workflow({ runner, journal });
    await expect(wf.agent({ prompt: 'x', kind: 'k' })).rejects.toThrow(
      "runner returned a report for agent 'x' that is not JSON",
    );
    expect(journal.recorded()).toEqual([]);
  });
});

describe('agentAs', () => {
  const answer = z.object({ answer: z.string(), citations: z.array(z.string()) });

  it('decodes the whole report into the schema type', async () => {
    const runner = new ScriptedRunner(async () => ({
      type: 'Finished',
      value: { answer: 'yes', citations: ['a'] },
      attempt: attemptOf('a'),
    }));
    const wf = new Workflow({ runner });
    const result = await wf.agentAs(answer, { prompt: 'q', kind: 'k', schema: { type: 'object' } });
    expect(result).toEqual({ answer: 'yes', citations: ['a'] });
    expect(runner.calls[0]?.schema).toEqual({ type: 'object' });
  });

  it('fails a rejected report with the decoder error and its path, and replays the same rejection', async () => {
    const journal = memoryJournal();
    const runner = new ScriptedRunner(async () => ({
      type: 'Finished',
      value: { answer: 'yes', citations: ['a', 7] },
      attempt: attemptOf('a'),
    }));
    const wf = new Workflow({ runner, journal });
    const live = await wf.agentAs(answer, { prompt: 'question\nmore', kind: 'k' }).catch((e: unknown) => e);
    expect(live).toBeInstanceOf(AgentFailed);
    const text =
      "agent 'question…' failed: report rejected: $.citations[1]: Invalid input: expected string, received number";
    expect((live as Error).message).toBe(text);
    // The raw report was journaled before decoding.
    expect(journal.recorded()[0]?.outcome).toMatchObject({
      type: 'Finished',
      value: { citations: ['a', 7] },
    });

    const log = eventLog();
    const resumedRunner = echoRunner();
    const resumed = new Workflow({
      runner: resumedRunner,
      journal: memoryJournal(journal.recorded()),
      onEvent: log.onEvent,
    });
    const replayed = await resumed
      .agentAs(answer, { prompt: 'question\nmore', kind: 'k' })
      .catch((e: unknown) => e);
    expect((replayed as Error).message).toBe(text);
    expect(resumedRunner.calls).toHaveLength(0);
    expect(log.text()).toEqual(['replayed question… Succeeded']);
  });
});
