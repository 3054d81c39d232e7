import { shChildLaunch } from '@libos/examples';
import type { ImageSpecInput } from '@libos/protocol';
import {
  type AgentCall,
  AgentFailed,
  type AgentOutcome,
  clusterRunner,
  contractRunner,
  Workflow,
  type WorkflowEvent,
} from '@libos/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster, eventually, READ_REQUEST, shImage, writeResult } from '../src/index.js';

let cluster: Cluster;

const USAGE =
  '"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":11,"cost_usd":0.5},"steps":3';
const ending = (status: string, fields = '', usage = USAGE) =>
  shImage(`${READ_REQUEST}; ${writeResult(`"status":"${status}",${fields}${usage}`)}`);
const reasoned = (status: string) => ending(status, `"reason":"asked to end ${status}",`);

/** Children that end every way the contract allows (and some it refuses), run locally and on the cluster. */
const ENDINGS: Record<string, ImageSpecInput> = {
  completed: ending('completed', '"output":{"answer":42},'),
  completed_null: ending('completed', '"output":null,'),
  completed_without_usage: ending('completed', '"output":"bare"', ',"steps":2'),
  no_report: ending('no_report'),
  max_steps_exhausted: ending('max_steps_exhausted'),
  context_yield: reasoned('context_yield'),
  aborted: reasoned('aborted'),
  interrupted: reasoned('interrupted'),
  failed: reasoned('failed'),
  timed_out: { ...shChildLaunch('cancel-aware'), deadline_ms: 300, cancel_grace_ms: 3_000 },
  malformed_status: ending('finished'),
  missing_result: shChildLaunch('exits-without-result', '3'),
};

beforeAll(async () => {
  cluster = await Cluster.start({ workers: 2, concurrency: 8 });
  for (const [name, image] of Object.entries(ENDINGS)) await cluster.admin.putImage(name, image);
  await cluster.admin.putImage('probe', { ...shChildLaunch('echo'), kind: 'probe-kind' });
  await cluster.admin.putImage('waits', { ...shChildLaunch('cancel-aware'), cancel_grace_ms: 3_000 });
  await cluster.admin.putImage('slow', shChildLaunch('sleep-then-complete', '2'));
});
afterAll(async () => {
  expect(await cluster?.stop()).toEqual([]);
});

const callOf = (kind: string, more: Partial<AgentCall> = {}): AgentCall => ({
  kind,
  input: { query: `run ${kind}` },
  label: `agent ${kind}`,
  scope: '',
  ...more,
});

/** The outcome without its attempt id, which names a different id space on each runner. */
function comparable(outcome: AgentOutcome) {
  if (outcome.attempt === undefined) return outcome;
  const { attemptId: _, ...attempt } = outcome.attempt;
  return { ...outcome, attempt };
}

describe('clusterRunner', () => {
  it('maps every ending to the same outcome contractRunner gives for the same child', async () => {
    const root = await cluster.root('parity');
    const onCluster = clusterRunner({ client: root.client });
    const names = Object.keys(ENDINGS);
    const [remote, local] = await Promise.all([
      Promise.all(names.map((kind) => onCluster.run(callOf(kind)))),
      Promise.all(
        names.map((kind) => {
          const image = ENDINGS[kind]!;
          const local = contractRunner({
            launch: () => ({ command: image.command, args: image.args ?? [] }),
            deadlineMs: image.deadline_ms ?? 30_000,
          });
          return local.run(callOf(kind));
        }),
      ),
    ]);
    const { children } = await root.client.listChildren();
    for (const [i, kind] of names.entries()) {
      expect({ kind, outcome: comparable(remote[i]!) }).toEqual({ kind, outcome: comparable(local[i]!) });
      const child = children.find((c) => c.image === kind);
      expect(remote[i]!.attempt?.attemptId).toBe(`${child?.pid}:1`);
    }
    expect(remote[0]).toMatchObject({
      type: 'Finished',
      value: { answer: 42 },
      attempt: { stepsUsed: 3, promptTokens: 11, completionTokens: 4, costUsd: 0.5 },
    });
    expect(remote[names.indexOf('completed_without_usage')]!.attempt?.unaccounted).toBe(
      "the child's result carries no usage",
    );
  });

  it('spawns on the kind’s image with the call’s input, label, step limit, budget and grants', async () => {
    const root = await cluster.root('request shape');
    const runner = clusterRunner({
      client: root.client,
      image: (kind) => (kind === 'probe-kind' ? 'probe' : kind),
      budget: () => ({ wall_ms: 20_000, steps: 99 }),
      capabilities: [{ resource: 'process:spawn', rights: ['use'] }],
    });
    const schema = { type: 'object', properties: { answer: { type: 'string' } } };
    const outcome = await runner.run(
      callOf('probe-kind', { maxSteps: 3, input: { query: 'q', n: 1 }, schema }),
    );
    expect(outcome.type).toBe('Finished');
    const { request } = (outcome as Extract<AgentOutcome, { type: 'Finished' }>).value as {
      request: Record<string, unknown>;
    };
    const [child] = (await root.client.listChildren()).children;
    expect(request).toMatchObject({
      kind: 'probe-kind',
      request_id: `${child?.pid}:1`,
      limits: { max_steps: 3 },
      schema,
      input: {
        query: 'q',
        n: 1,
        goal: 'agent probe-kind',
        pid: child?.pid,
        parent_pid: root.pid,
        input: { query: 'q', n: 1 },
      },
    });
    expect(child?.resource_budget.wall_ms.limit).toBe(20_000);
    expect(child?.resource_budget.steps.limit).toBe(3); // maxSteps wins over the budget's steps
    expect(child?.capabilities.map((grant) => grant.resource)).toEqual(['process:spawn']);
  });

  it('refuses a call whose image does not exist, spawning nothing', async () => {
    const root = await cluster.root('refusals');
    const runner = clusterRunner({ client: root.client });
    const missing = await runner.run(callOf('no-such-image'));
    expect(missing).toMatchObject({
      type: 'DidNotFinish',
      failure: { type: 'Failed', reason: expect.stringMatching(/^spawn refused: /) },
    });
    expect(missing.attempt).toBeUndefined();
    expect((await root.client.listChildren()).children).toEqual([]);
  });

  it('cancels the child when the workflow is cancelled, and reports an operator’s kill as a failure', async () => {
    const root = await cluster.root('cancellation');
    const events: WorkflowEvent[] = [];
    const wf = new Workflow({
      runner: clusterRunner({ client: root.client }),
      onEvent: (e) => events.push(e),
    });
    const controller = new AbortController();
    const call = wf.agentCall({ kind: 'waits', input: null, label: 'waits', signal: controller.signal });
    const running = await eventually(
      async () => (await root.client.listChildren()).children.find((c) => c.status === 'running'),
      { what: 'the child to run' },
    );
    controller.abort(new Error('the user gave up'));
    await expect(call).rejects.toThrow('the user gave up');
    expect(events.at(-1)).toEqual({ type: 'AgentFinished', label: 'waits', disposition: 'Interrupted' });
    const killed = await root.client.wait({ child_pid: running.pid });
    // cancel-aware answers the stdin EOF with `interrupted` and its usage, which the kill keeps.
    expect(killed).toMatchObject({
      status: 'killed',
      outcome: { type: 'killed', usage: { prompt_tokens: 1 } },
    });

    const terminated = wf.agentCall({ kind: 'waits', input: null, label: 'terminated' });
    const next = await eventually(
      async () =>
        (await root.client.listChildren()).children.find(
          (c) => c.status === 'running' && c.pid !== running.pid,
        ),
      { what: 'the second child to run' },
    );
    await cluster.admin.signalProcess(next.pid, 'terminate', 'an operator ended it');
    await expect(terminated).rejects.toThrow(AgentFailed);
    await expect(terminated).rejects.toThrow("agent 'terminated' failed: killed: an operator ended it");
  });

  // Last: it restarts the coordinator.
  it('keeps waiting across a coordinator crash and still reads the result', async () => {
    const root = await cluster.root('outlives a coordinator crash');
    const wf = new Workflow({ runner: clusterRunner({ client: root.client }) });
    const answers = Promise.all(
      [1, 2, 3].map((n) => wf.agentCall({ kind: 'slow', input: { n }, label: `slow ${n}` })),
    );
    await eventually(
      async () => ((await root.client.listChildren()).children.length === 3 ? true : undefined),
      { what: 'three children' },
    );
    await cluster.restartCoordinator('SIGKILL');
    expect(await answers).toEqual([{ slept: '2' }, { slept: '2' }, { slept: '2' }]);
    expect(wf.callsMade()).toBe(3);
  });
});
