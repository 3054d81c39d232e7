import { describe, expect, it } from 'vitest';
import {
  type AgentCall,
  AgentFailed,
  AgentFailure,
  type JournalEntry,
  type Json,
  memoryJournal,
  ReplayDecision,
  sameWork,
  Workflow,
} from '../src/index.js';
import { attemptOf, deferred, echoRunner, eventLog, ScriptedRunner } from './workflow-support.js';

function call(prompt: string, extra: Partial<AgentCall> = {}): AgentCall {
  return { kind: 'scout', input: { query: prompt }, label: prompt, scope: '', ...extra };
}

function finished(prompt: string, value: Json, extra: Partial<AgentCall> = {}): JournalEntry {
  return {
    call: call(prompt, extra),
    outcome: { type: 'Finished', value, attempt: attemptOf(`old-${String(value)}`, 50, 50) },
  };
}

function failed(prompt: string, failure: AgentFailure): JournalEntry {
  return { call: call(prompt), outcome: { type: 'DidNotFinish', failure } };
}

describe('work identity', () => {
  it('is kind, input (key order aside), max steps, scope and schema; never label, phase or attempt', () => {
    const a = call('q', { input: { query: 'q', hints: { x: 1, y: [1, 2] } }, schema: { a: 1, b: 2 } });
    expect(sameWork(a, { ...a, label: 'other' })).toBe(true);
    expect(sameWork(a, { ...a, input: { hints: { y: [1, 2], x: 1 }, query: 'q' } })).toBe(true);
    expect(sameWork(a, { ...a, schema: { b: 2, a: 1 } })).toBe(true);
    expect(sameWork(a, { ...a, input: { query: 'q', hints: { x: 1, y: [2, 1] } } })).toBe(false);
    expect(sameWork(a, { ...a, kind: 'review' })).toBe(false);
    expect(sameWork(a, { ...a, scope: 'other' })).toBe(false);
    expect(sameWork(a, { ...a, maxSteps: 3 })).toBe(false);
    expect(sameWork(a, { ...a, schema: { a: 1 } })).toBe(false);
    const { schema: _schema, ...withoutSchema } = a;
    expect(sameWork(a, withoutSchema)).toBe(false);
  });
});

describe('replay', () => {
  it('serves identical calls from distinct entries (a multiset), and runs the surplus live', async () => {
    const runner = echoRunner();
    const log = eventLog();
    const journal = memoryJournal([finished('same', 'A'), finished('other', 'X'), finished('same', 'B')]);
    const wf = new Workflow({ runner, journal, onEvent: log.onEvent });
    const results = await Promise.all([1, 2, 3].map(() => wf.agent({ prompt: 'same', kind: 'scout' })));
    expect(results).toEqual(['A', 'B', { echo: { query: 'same' } }]);
    expect(wf.callsReplayed()).toBe(2);
    expect(wf.callsMade()).toBe(1);
    // Replays are free: only the live call spent tokens.
    expect(wf.tokensSpent()).toBe(15);
    expect(log.text()).toEqual([
      'replayed same Succeeded',
      'replayed same Succeeded',
      'started same',
      'finished same Succeeded',
    ]);
    // Only the live outcome is appended; replays add nothing.
    expect(journal.recorded()).toHaveLength(1);
  });

  it('runs two identical calls of one live run both (replay reads prior entries only)', async () => {
    const runner = echoRunner();
    const wf = new Workflow({ runner, journal: memoryJournal() });
    await wf.agent({ prompt: 'same', kind: 'scout' });
    await wf.agent({ prompt: 'same', kind: 'scout' });
    expect(runner.calls).toHaveLength(2);
    expect(wf.callsReplayed()).toBe(0);
  });

  it('matches by work, not label, and keeps replay scopes apart', async () => {
    const prior = [finished('q', 'old')];
    const relabelled = new Workflow({ runner: echoRunner(), journal: memoryJournal(prior) });
    expect(await relabelled.agent({ prompt: 'q', kind: 'scout', label: 'another label' })).toBe('old');
    const runner = echoRunner();
    const scoped = new Workflow({ runner, journal: memoryJournal(prior), replayScope: 'v2' });
    expect(await scoped.agent({ prompt: 'q', kind: 'scout' })).toEqual({ echo: { query: 'q' } });
    expect(runner.calls[0]?.scope).toBe('v2');
  });

  it('re-runs earlier failures live (fresh allowance), but a Skipped refusal stands', async () => {
    const journal = memoryJournal([
      failed('flaky', AgentFailure.TimedOut),
      failed('declined', AgentFailure.Skipped),
    ]);
    const runner = echoRunner();
    const log = eventLog();
    const wf = new Workflow({ runner, journal, maxCalls: 1, onEvent: log.onEvent });
    expect(await wf.agent({ prompt: 'flaky', kind: 'scout' })).toEqual({ echo: { query: 'flaky' } });
    const refused = await wf.agent({ prompt: 'declined', kind: 'scout' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AgentFailed);
    expect((refused as Error).message).toBe("agent 'declined' was skipped by the user");
    expect(runner.calls.map((c) => c.label)).toEqual(['flaky']);
    expect(wf.callsMade()).toBe(1);
    expect(wf.callsReplayed()).toBe(1);
    expect(log.text()).toEqual([
      'started flaky',
      'finished flaky Succeeded',
      'replayed declined FailedAgent',
    ]);
  });

  it('prefers a matching Finished over an earlier Skipped, and consumes each Skipped once', async () => {
    const journal = memoryJournal([failed('q', AgentFailure.Skipped), finished('q', 'done')]);
    const runner = echoRunner();
    const wf = new Workflow({ runner, journal });
    expect(await wf.agent({ prompt: 'q', kind: 'scout' })).toBe('done');
    await expect(wf.agent({ prompt: 'q', kind: 'scout' })).rejects.toBeInstanceOf(AgentFailed);
    expect(await wf.agent({ prompt: 'q', kind: 'scout' })).toEqual({ echo: { query: 'q' } });
    expect(runner.calls).toHaveLength(1);
  });

  it('replays without a slot or allowance while live calls hold every slot', async () => {
    const gate = deferred();
    const runner = new ScriptedRunner(async () => {
      await gate.promise;
      return { type: 'Finished', value: 'live', attempt: attemptOf('l') };
    });
    const wf = new Workflow({
      runner,
      maxConcurrent: 1,
      maxCalls: 1,
      journal: memoryJournal([finished('old', 'r')]),
    });
    const live = wf.agent({ prompt: 'slow', kind: 'scout' });
    expect(await wf.agent({ prompt: 'old', kind: 'scout' })).toBe('r');
    gate.resolve();
    expect(await live).toBe('live');
  });
});

describe('validateReplay', () => {
  it('serves a refreshed outcome', async () => {
    const runner = echoRunner();
    runner.validateReplay = (_call, outcome) =>
      ReplayDecision.serve(
        outcome.type === 'Finished' ? { ...outcome, value: { refreshed: outcome.value } } : outcome,
      );
    const wf = new Workflow({ runner, journal: memoryJournal([finished('q', 'old')]) });
    expect(await wf.agent({ prompt: 'q', kind: 'scout' })).toEqual({ refreshed: 'old' });
    expect(runner.calls).toHaveLength(0);
  });

  it('keeps a vetoed candidate consumed, tries the next one, and runs live when none remains', async () => {
    const runner = echoRunner();
    const seen: unknown[] = [];
    runner.validateReplay = async (_call, outcome) => {
      const value = outcome.type === 'Finished' ? outcome.value : null;
      seen.push(value);
      return value === 'stale' ? ReplayDecision.rerun : ReplayDecision.serve(outcome);
    };
    const wf = new Workflow({
      runner,
      journal: memoryJournal([finished('q', 'stale'), finished('q', 'fresh')]),
    });
    expect(await wf.agent({ prompt: 'q', kind: 'scout' })).toBe('fresh');
    // The stale entry stays consumed: a second identical call finds nothing and runs live.
    expect(await wf.agent({ prompt: 'q', kind: 'scout' })).toEqual({ echo: { query: 'q' } });
    expect(seen).toEqual(['stale', 'fresh']);
    expect(wf.callsReplayed()).toBe(1);
    expect(wf.callsMade()).toBe(1);
  });

  it('rolls the claim back when the validator raises', async () => {
    const runner = echoRunner();
    let broken = true;
    runner.validateReplay = (_call, outcome) => {
      if (broken) throw new Error('resource check failed');
      return ReplayDecision.serve(outcome);
    };
    const log = eventLog();
    const wf = new Workflow({
      runner,
      journal: memoryJournal([finished('q', 'A'), finished('q', 'B')]),
      onEvent: log.onEvent,
    });
    await expect(wf.agent({ prompt: 'q', kind: 'scout' })).rejects.toThrow('resource check failed');
    broken = false;
    // 'A' is available again, so it is served before 'B'.
    expect(await wf.agent({ prompt: 'q', kind: 'scout' })).toBe('A');
    expect(await wf.agent({ prompt: 'q', kind: 'scout' })).toBe('B');
    expect(wf.callsReplayed()).toBe(2);
    expect(runner.calls).toHaveLength(0);
    expect(log.text()).toEqual(['replayed q Succeeded', 'replayed q Succeeded']);
  });
});
