import { describe, expect, it } from 'vitest';
import {
  AgentFailed,
  AgentFailure,
  allOk,
  attempt,
  CallBudgetExhausted,
  collectOk,
  exponentialBackoff,
  fanOut,
  fixedBackoff,
  memoryJournal,
  parallel,
  parallelAll,
  QuorumNotReached,
  quorum,
  type Result,
  retry,
  Workflow,
  worthRetrying,
} from '../src/index.js';
import { attemptOf, deferred, eventLog, ScriptedRunner, untilAborted } from './workflow-support.js';

/** A runner driven by the prompt: `ok:<v>` finishes, `fail` times out, `hang` waits to be cancelled, `wait` waits on `gate`. */
function promptRunner(gate: Promise<void> = Promise.resolve()): ScriptedRunner {
  return new ScriptedRunner(async (call, signal, n) => {
    const prompt = (call.input as { query: string }).query;
    if (prompt === 'hang') return untilAborted(signal);
    if (prompt.startsWith('wait')) await gate;
    if (prompt.startsWith('fail'))
      return { type: 'DidNotFinish', failure: AgentFailure.TimedOut, attempt: attemptOf(`a${n}`) };
    return { type: 'Finished', value: prompt, attempt: attemptOf(`a${n}`, 1, 1) };
  });
}

const ok = <T>(value: T): Result<T> => ({ ok: true, value });
const err = (label: string): Result<never> => ({
  ok: false,
  error: new AgentFailed(label, AgentFailure.NoReport),
});

describe('parallel and fanOut', () => {
  it('returns one Result per thunk in input order, folding workflow errors without cancelling', async () => {
    const gate = deferred();
    const log = eventLog();
    const wf = new Workflow({ runner: promptRunner(gate.promise), onEvent: log.onEvent });
    const running = parallel([
      () => wf.agent({ prompt: 'wait-first', kind: 'k' }),
      () => wf.agent({ prompt: 'fail', kind: 'k' }),
      () => wf.agent({ prompt: 'third', kind: 'k' }),
    ]);
    await new Promise((r) => setImmediate(r));
    gate.resolve(); // the first thunk finishes last
    const results = await running;
    expect(results.map((r) => (r.ok ? r.value : r.error.message))).toEqual([
      'wait-first',
      "agent 'fail' timed out",
      'third',
    ]);
    expect(log.text().filter((t) => t.startsWith('finished'))).toEqual([
      'finished fail FailedAgent',
      'finished third Succeeded',
      'finished wait-first Succeeded',
    ]);
  });

  it('cancels the siblings when a thunk throws a non-workflow error, and propagates it', async () => {
    const log = eventLog();
    const wf = new Workflow({ runner: promptRunner(), onEvent: log.onEvent });
    const error = await parallel([
      () => wf.agent({ prompt: 'hang', kind: 'k', label: 'sibling' }),
      async () => {
        await new Promise((r) => setImmediate(r));
        throw new Error('bug in the program');
      },
    ]).catch((e: unknown) => e);
    expect((error as Error).message).toBe('bug in the program');
    // The group waited for the cancelled sibling, which closed its bracket as Interrupted.
    expect(log.text()).toEqual(['started sibling', 'finished sibling Interrupted']);
  });

  it('passes each thunk its group signal, and cancels nested groups with the outer one', async () => {
    const log = eventLog();
    const wf = new Workflow({ runner: promptRunner(), onEvent: log.onEvent });
    let seen: AbortSignal | undefined;
    const error = await parallel([
      (signal) => {
        seen = signal;
        return parallel([() => wf.agent({ prompt: 'hang', kind: 'k', label: 'nested' })]);
      },
      async () => {
        await new Promise((r) => setTimeout(r, 10));
        throw new TypeError('outer bug');
      },
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(seen?.aborted).toBe(true);
    expect(log.text()).toEqual(['started nested', 'finished nested Interrupted']);
  });

  it('rejects with the abort when the caller cancels the group', async () => {
    const log = eventLog();
    const wf = new Workflow({ runner: promptRunner(), onEvent: log.onEvent });
    const controller = new AbortController();
    const group = parallel(
      [
        () => wf.agent({ prompt: 'hang', kind: 'k', label: 'one' }),
        () => wf.agent({ prompt: 'hang', kind: 'k', label: 'two' }),
      ],
      { signal: controller.signal },
    );
    await new Promise((r) => setImmediate(r));
    controller.abort();
    await expect(group).rejects.toMatchObject({ name: 'AbortError' });
    expect(log.text().sort()).toEqual([
      'finished one Interrupted',
      'finished two Interrupted',
      'started one',
      'started two',
    ]);
    await expect(parallel([async () => 1], { signal: controller.signal })).rejects.toMatchObject({
      name: 'AbortError',
    });
  });

  it('fanOut runs one call per item and keeps input order', async () => {
    const wf = new Workflow({ runner: promptRunner(), maxConcurrent: 2 });
    const items = ['a', 'fail-b', 'c', 'd'];
    const results = await fanOut(items, (item, _signal, index) =>
      wf.agent({ prompt: item, kind: 'k', label: `${index}` }),
    );
    expect(results.map((r) => (r.ok ? r.value : r.error.message))).toEqual([
      'a',
      "agent '1' timed out",
      'c',
      'd',
    ]);
  });
});

describe('parallelAll', () => {
  it('returns the values in input order', async () => {
    const wf = new Workflow({ runner: promptRunner() });
    expect(await parallelAll(['x', 'y', 'z'].map((p) => () => wf.agent({ prompt: p, kind: 'k' })))).toEqual([
      'x',
      'y',
      'z',
    ]);
  });

  it('fails fast: the first AgentFailed cancels siblings in flight, which close as Interrupted', async () => {
    const log = eventLog();
    const journal = memoryJournal();
    const wf = new Workflow({ runner: promptRunner(), onEvent: log.onEvent, journal });
    const error = await parallelAll([
      () => wf.agent({ prompt: 'hang', kind: 'k', label: 'slow-1' }),
      () => wf.agent({ prompt: 'fail', kind: 'k' }),
      () => wf.agent({ prompt: 'hang', kind: 'k', label: 'slow-2' }),
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentFailed);
    expect((error as Error).message).toBe("agent 'fail' timed out");
    const finished = log.text().filter((t) => t.startsWith('finished'));
    expect(finished).toEqual([
      'finished fail FailedAgent',
      'finished slow-1 Interrupted',
      'finished slow-2 Interrupted',
    ]);
    // Cancellations are not journaled; the failure is.
    expect(journal.recorded().map((e) => e.call.label)).toEqual(['fail']);
  });
});

describe('attempt, allOk, collectOk, quorum', () => {
  it('attempt folds the typed errors and re-raises everything else', async () => {
    expect(await attempt(async () => 5)).toEqual({ ok: true, value: 5 });
    for (const typed of [
      new AgentFailed('a', AgentFailure.MaxSteps),
      new CallBudgetExhausted('b'),
      new QuorumNotReached(2, 1, 3),
    ]) {
      const result = await attempt(async () => {
        throw typed;
      });
      expect(result).toEqual({ ok: false, error: typed });
    }
    await expect(
      attempt(async () => {
        throw new RangeError('bug');
      }),
    ).rejects.toThrow('bug');
  });

  it('allOk returns all values or raises the first Err in array order', () => {
    expect(allOk([ok(1), ok(2)])).toEqual([1, 2]);
    expect(() => allOk([ok(1), err('second'), err('third')])).toThrow(
      "agent 'second' finished without a report",
    );
  });

  it('collectOk and quorum count successes against the minimum', () => {
    const results = [ok('a'), err('b'), ok('c')];
    expect(collectOk(results)).toEqual(['a', 'c']);
    expect(collectOk(results, 2)).toEqual(['a', 'c']);
    expect(collectOk([err('x')], -3)).toEqual([]);
    const missed = (() => {
      try {
        quorum(results, 3);
      } catch (e) {
        return e;
      }
    })();
    expect(missed).toBeInstanceOf(QuorumNotReached);
    expect((missed as Error).message).toBe('quorum not reached: 2 of 3 succeeded, 3 required');
    expect(quorum([ok(1), ok(1)], 2)).toEqual([1, 1]);
  });
});

describe('retry', () => {
  it('worthRetrying: agent failures except refusals; never allowance, quorum or foreign errors', () => {
    expect(worthRetrying(new AgentFailed('a', AgentFailure.TimedOut))).toBe(true);
    expect(worthRetrying(new AgentFailed('a', AgentFailure.Failed('x')))).toBe(true);
    expect(worthRetrying(new AgentFailed('a', AgentFailure.Skipped))).toBe(false);
    expect(worthRetrying(new CallBudgetExhausted('a'))).toBe(false);
    expect(worthRetrying(new QuorumNotReached(1, 0, 1))).toBe(false);
    expect(worthRetrying(new Error('x'))).toBe(false);
  });

  it('makes up to 1 + maxRetry full launches and raises the last error', async () => {
    const journal = memoryJournal();
    const wf = new Workflow({ runner: promptRunner(), journal });
    const seen: number[] = [];
    const error = await retry(
      (n) => {
        seen.push(n);
        return wf.agent({ prompt: `fail ${n}`, kind: 'k' });
      },
      { maxRetry: 2 },
    ).catch((e: unknown) => e);
    expect((error as Error).message).toBe("agent 'fail 3' timed out");
    expect(seen).toEqual([1, 2, 3]);
    expect(wf.callsMade()).toBe(3);
    expect(journal.recorded()).toHaveLength(3);
  });

  it('returns the first success', async () => {
    const wf = new Workflow({ runner: promptRunner() });
    expect(await retry((n) => wf.agent({ prompt: n === 1 ? 'fail' : 'fine', kind: 'k' }))).toBe('fine');
    expect(wf.callsMade()).toBe(2);
  });

  it('never retries a refusal, an exhausted allowance, a foreign error, or what retriable declines', async () => {
    let calls = 0;
    const failing = (error: Error) => async () => {
      calls += 1;
      throw error;
    };
    for (const error of [
      new AgentFailed('s', AgentFailure.Skipped),
      new CallBudgetExhausted('b'),
      new Error('engine bug'),
    ]) {
      calls = 0;
      await expect(retry(failing(error), { maxRetry: 3 })).rejects.toBe(error);
      expect(calls).toBe(1);
    }
    calls = 0;
    const timedOut = new AgentFailed('t', AgentFailure.TimedOut);
    await expect(retry(failing(timedOut), { maxRetry: 3, retriable: () => false })).rejects.toBe(timedOut);
    expect(calls).toBe(1);
    // A custom predicate can retry what the default declines.
    calls = 0;
    await expect(
      retry(failing(new CallBudgetExhausted('b')), { maxRetry: 2, retriable: () => true }),
    ).rejects.toBeInstanceOf(CallBudgetExhausted);
    expect(calls).toBe(3);
  });

  it('waits the backoff between attempts and stops waiting when cancelled', async () => {
    const delays: number[] = [];
    const backoff = (n: number) => {
      delays.push(n);
      return 30;
    };
    const timedOut = new AgentFailed('t', AgentFailure.TimedOut);
    const begin = Date.now();
    await expect(
      retry(
        async () => {
          throw timedOut;
        },
        { maxRetry: 2, backoff },
      ),
    ).rejects.toBe(timedOut);
    expect(delays).toEqual([1, 2]);
    expect(Date.now() - begin).toBeGreaterThanOrEqual(55);

    const controller = new AbortController();
    const waiting = retry(
      async () => {
        throw timedOut;
      },
      { backoff: fixedBackoff(10_000), signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 20);
    const cancelledAt = Date.now();
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    expect(Date.now() - cancelledAt).toBeLessThan(5_000);
  });

  it('exponentialBackoff grows by the factor up to the cap', () => {
    const backoff = exponentialBackoff({ initialMs: 100, factor: 3, maxMs: 1000 });
    expect([1, 2, 3, 4].map(backoff)).toEqual([100, 300, 900, 1000]);
  });
});
