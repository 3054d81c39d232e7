import { describe, expect, it } from 'vitest';
import {
  AgentFailed,
  type AgentOutcome,
  contractRunner,
  memoryJournal,
  ReplayDecision,
  Workflow,
} from '../src/index.js';
import { COMPLETED_READY, ECHO_REQUEST, eventLog, shChild, writeResult } from './workflow-support.js';

const USAGE =
  '"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":7}';

describe('contractRunner', () => {
  it('runs the example of the contract specification: a shell child returns an accounted workflow report', async () => {
    const wf = new Workflow({
      runner: contractRunner({ launch: () => shChild(COMPLETED_READY) }),
      maxCalls: 1,
    });
    expect(await wf.agent({ prompt: 'Are you ready?', kind: 'echo' })).toEqual({ answer: 'ready' });
    expect(wf.callsMade()).toBe(1);
    expect(wf.tokensSpent()).toBe(10);
  });

  it('sends the exact request line, with limits and schema only when the call has them', async () => {
    const wf = new Workflow({ runner: contractRunner({ launch: () => shChild(ECHO_REQUEST) }) });
    expect(await wf.agent({ prompt: 'hello', kind: 'probe', hints: 'from a foreign engine' })).toEqual({
      version: 1,
      request_id: 'cr-1',
      kind: 'probe',
      input: { query: 'hello', hints: 'from a foreign engine' },
    });
    expect(
      await wf.agentCall({
        kind: 'probe',
        input: { query: 'q' },
        label: 'l',
        maxSteps: 7,
        schema: { type: 'object' },
      }),
    ).toEqual({
      version: 1,
      request_id: 'cr-2',
      kind: 'probe',
      input: { query: 'q' },
      limits: { max_steps: 7 },
      schema: { type: 'object' },
    });
  });

  it('numbers attempts cr-1, cr-2… per runner value, and never launches for a replay', async () => {
    const launched: string[] = [];
    const journal = memoryJournal();
    const runner = contractRunner({
      launch: (call) => {
        launched.push(call.label);
        return shChild(COMPLETED_READY);
      },
    });
    const wf = new Workflow({ runner, journal });
    await wf.agent({ prompt: 'a', kind: 'k' });
    await wf.agent({ prompt: 'b', kind: 'k' });
    expect(journal.recorded().map((e) => e.outcome.attempt?.attemptId)).toEqual(['cr-1', 'cr-2']);

    const again = memoryJournal(journal.recorded());
    const fresh = contractRunner({
      launch: (call) => {
        launched.push(call.label);
        return shChild(COMPLETED_READY);
      },
    });
    const resumed = new Workflow({ runner: fresh, journal: again });
    await resumed.agent({ prompt: 'a', kind: 'k' });
    await resumed.agent({ prompt: 'c', kind: 'k' });
    expect(launched).toEqual(['a', 'b', 'c']);
    expect(again.recorded().map((e) => e.outcome.attempt?.attemptId)).toEqual(['cr-1']);
  });

  it('maps every terminal to its outcome, always with an attempt', async () => {
    const cases: [string, AgentOutcome][] = [
      [
        writeResult(
          `"status":"completed","output":null,${USAGE.replace('"prompt_cache_miss_tokens":7', '"prompt_cache_miss_tokens":7,"cost_usd":0.25')},"steps":4`,
        ),
        {
          type: 'Finished',
          value: null,
          attempt: { attemptId: 'cr-1', stepsUsed: 4, promptTokens: 7, completionTokens: 3, costUsd: 0.25 },
        },
      ],
      [
        writeResult('"status":"no_report","steps":2'),
        {
          type: 'DidNotFinish',
          failure: { type: 'NoReport' },
          attempt: {
            attemptId: 'cr-1',
            stepsUsed: 2,
            promptTokens: 0,
            completionTokens: 0,
            unaccounted: "the child's result carries no usage",
          },
        },
      ],
      [
        writeResult(`"status":"max_steps_exhausted",${USAGE}`),
        {
          type: 'DidNotFinish',
          failure: { type: 'MaxSteps' },
          attempt: { attemptId: 'cr-1', stepsUsed: 0, promptTokens: 7, completionTokens: 3 },
        },
      ],
      [
        writeResult(`"status":"context_yield","reason":"full",${USAGE}`),
        {
          type: 'DidNotFinish',
          failure: { type: 'ContextYield' },
          attempt: { attemptId: 'cr-1', stepsUsed: 0, promptTokens: 7, completionTokens: 3 },
        },
      ],
      [
        writeResult(`"status":"aborted","reason":"the user said stop",${USAGE}`),
        {
          type: 'DidNotFinish',
          failure: { type: 'Failed', reason: 'aborted: the user said stop' },
          attempt: { attemptId: 'cr-1', stepsUsed: 0, promptTokens: 7, completionTokens: 3 },
        },
      ],
      [
        writeResult(`"status":"failed","reason":"no key",${USAGE}`),
        {
          type: 'DidNotFinish',
          failure: { type: 'Failed', reason: 'no key' },
          attempt: { attemptId: 'cr-1', stepsUsed: 0, promptTokens: 7, completionTokens: 3 },
        },
      ],
      [
        'exit 3\n',
        {
          type: 'DidNotFinish',
          failure: { type: 'Failed', reason: 'the child exited 3 without writing a result' },
          attempt: {
            attemptId: 'cr-1',
            stepsUsed: 0,
            promptTokens: 0,
            completionTokens: 0,
            unaccounted: 'the child left no result',
          },
        },
      ],
    ];
    for (const [body, expected] of cases) {
      const journal = memoryJournal();
      const wf = new Workflow({ runner: contractRunner({ launch: () => shChild(body) }), journal });
      await wf.agent({ prompt: 'p', kind: 'k' }).catch((e: unknown) => {
        if (!(e instanceof AgentFailed)) throw e;
      });
      expect(journal.recorded()[0]?.outcome).toEqual(expected);
    }
  });

  it('ends a child that outlives its deadline as TimedOut (the spec deadline overrides the runner default)', async () => {
    // The child waits for stdin EOF (the runner's cancel signal) and then leaves without a result.
    const runner = contractRunner({
      launch: () => ({ ...shChild('cat > /dev/null\n'), deadlineMs: 200 }),
      deadlineMs: 60_000,
    });
    const wf = new Workflow({ runner });
    const begin = Date.now();
    await expect(wf.agent({ prompt: 'p', kind: 'k' })).rejects.toThrow("agent 'p' timed out");
    expect(Date.now() - begin).toBeLessThan(5_000);
  });

  it('counts an argv without {result_file} as a launch that spent nothing', async () => {
    const journal = memoryJournal();
    const wf = new Workflow({
      runner: contractRunner({ launch: () => ({ command: 'sh', args: ['-c', 'exit 0'] }) }),
      journal,
    });
    await expect(wf.agent({ prompt: 'p', kind: 'k' })).rejects.toThrow(
      "agent 'p' failed: the argv must name {result_file}, where the child writes its result",
    );
    expect(wf.callsMade()).toBe(1);
    expect(journal.recorded()[0]?.outcome.attempt).toEqual({
      attemptId: 'cr-1',
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
    });
  });

  it('passes cwd and extra environment to the child', async () => {
    const body = `printf '{"version":1,"request_id":"%s","status":"completed","output":"%s"}' "$id" "$(pwd):$GREETING" > "$1"\n`;
    const runner = contractRunner({
      launch: () => ({ ...shChild(body), cwd: '/tmp', extraEnv: { GREETING: 'hi' } }),
    });
    expect(await new Workflow({ runner }).agent({ prompt: 'p', kind: 'k' })).toBe('/tmp:hi');
  });

  it('hands its validateReplay to the workflow', async () => {
    const journal = memoryJournal();
    await new Workflow({ runner: contractRunner({ launch: () => shChild(COMPLETED_READY) }), journal }).agent(
      {
        prompt: 'p',
        kind: 'k',
      },
    );
    const runner = contractRunner({
      launch: () => shChild(writeResult('"status":"completed","output":"fresh"')),
      validateReplay: () => ReplayDecision.rerun,
    });
    const wf = new Workflow({ runner, journal: memoryJournal(journal.recorded()) });
    expect(await wf.agent({ prompt: 'p', kind: 'k' })).toBe('fresh');
    expect(wf.callsReplayed()).toBe(0);
  });

  it('tears the child down when cancelled: Interrupted, no journal entry, no process left', async () => {
    const journal = memoryJournal();
    const log = eventLog();
    const pidFile = `/tmp/sdk-cr-cancel-${process.pid}-${Date.now()}`;
    const runner = contractRunner({ launch: () => shChild(`echo $$ > ${pidFile}\nsleep 30\n`) });
    const wf = new Workflow({ runner, journal, onEvent: log.onEvent });
    const controller = new AbortController();
    const call = wf.agent({ prompt: 'p', kind: 'k', signal: controller.signal });
    const pid = await waitForPid(pidFile);
    controller.abort();
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    expect(log.text()).toEqual(['started p', 'finished p Interrupted']);
    expect(journal.recorded()).toEqual([]);
    expect(alive(pid)).toBe(false);
  });
});

async function waitForPid(path: string): Promise<number> {
  const { readFile, rm } = await import('node:fs/promises');
  for (let i = 0; i < 200; i += 1) {
    const text = await readFile(path, 'utf8').catch(() => '');
    if (text.trim() !== '') {
      await rm(path, { force: true });
      return Number(text.trim());
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no pid in ${path}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
