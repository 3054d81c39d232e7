import { tsChildLaunch } from '@libos/examples';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../src/index.js';

// The reference's `hosted` handoff with libos as the host: a worker gives every child it launches
// a `WORKFLOW_HOST` (version 2), so a reference-style workflow program running in a libos child
// (examples/src/children/hosted-workflow.ts: `hostedContext().run(…)`, one agent per question)
// launches its agents through the handoff's bridge, each one a libos child of the workflow's
// process, a grandchild of the root; their results come back into the workflow.

let cluster: Cluster;

beforeAll(async () => {
  cluster = await Cluster.start({ workers: 1, concurrency: 4 });
  await cluster.admin.putImage('echo', { ...tsChildLaunch('echo'), deadline_ms: 30_000 });
  await cluster.admin.putImage('workflow', { ...tsChildLaunch('hosted-workflow'), deadline_ms: 60_000 });
});

afterAll(async () => {
  expect(await cluster?.stop()).toEqual([]);
});

const mayDelegateEcho = [
  { resource: 'process:spawn', rights: ['use'] },
  { resource: 'image:echo', rights: ['read'] },
];

describe('a hosted workflow in a libos child', () => {
  it('launches its agents as libos grandchildren, visible in the tree, their results back in the workflow', async () => {
    const root = await cluster.root('run a hosted workflow');
    const workflow = await root.client.spawn({
      goal: 'a reference-style workflow',
      image: 'workflow',
      input: { questions: ['first question', 'second question'] },
      inherit_capabilities: mayDelegateEcho,
      resource_budget: { children: 2 },
    });
    const done = await root.client.wait({ child_pid: workflow.pid });
    const result = done.result_oid ? (await root.client.readObject({ oid: done.result_oid })).payload : null;
    expect(done.status, JSON.stringify(done.outcome)).toBe('exited');
    // Each echo agent answered with its request's input: the question it was asked.
    const answers = (result as { answers: { query: string; pid: string; parent_pid: string }[] }).answers;
    expect(answers.map((a) => a.query)).toEqual(['first question', 'second question']);
    expect(answers.every((a) => a.parent_pid === workflow.pid)).toBe(true);
    expect(result).toMatchObject({ calls: 2, capacity: 2, host: { pid: workflow.pid } });

    const tree = await cluster.admin.processTree(root.pid);
    // The workflow launches its agents concurrently: the tree lists them in pid order, which is either.
    const below = tree.nodes
      .filter((n) => n.parent_pid === workflow.pid)
      .sort((a, b) => a.goal.localeCompare(b.goal));
    expect(below.map((n) => [n.image, n.status, n.depth, n.goal])).toEqual([
      ['echo', 'exited', 2, 'first question'],
      ['echo', 'exited', 2, 'second question'],
    ]);
    expect(answers.map((a) => a.pid)).toEqual(below.map((n) => n.pid));
  });

  it('calls past the reserved block are skipped without a launch (the block is the children budget)', async () => {
    const root = await cluster.root('run a hosted workflow past its block');
    const workflow = await root.client.spawn({
      goal: 'three questions, two children',
      image: 'workflow',
      input: { questions: ['one', 'two', 'three'] },
      inherit_capabilities: mayDelegateEcho,
      resource_budget: { children: 2 },
    });
    const done = await root.client.wait({ child_pid: workflow.pid });
    const result = done.result_oid ? (await root.client.readObject({ oid: done.result_oid })).payload : null;
    expect(done.status, JSON.stringify(done.outcome)).toBe('exited');
    const answers = (result as { answers: unknown[] }).answers;
    expect(answers.filter((a) => typeof a === 'object')).toHaveLength(2);
    expect(answers.filter((a) => typeof a === 'string')).toEqual([
      expect.stringMatching(/^agent '.+' was skipped by the user$/),
    ]);
    const tree = await cluster.admin.processTree(root.pid);
    expect(tree.nodes.filter((n) => n.parent_pid === workflow.pid)).toHaveLength(2);
  });

  it('without spawn authority, each agent fails with the kernel refusal and nothing is launched', async () => {
    const root = await cluster.root('run a hosted workflow without authority');
    const workflow = await root.client.spawn({
      goal: 'no authority to delegate',
      image: 'workflow',
      input: { questions: ['refused'] },
      resource_budget: { children: 2 },
    });
    const done = await root.client.wait({ child_pid: workflow.pid });
    const result = done.result_oid ? (await root.client.readObject({ oid: done.result_oid })).payload : null;
    expect(done.status, JSON.stringify(done.outcome)).toBe('exited');
    expect((result as { answers: string[] }).answers).toEqual([
      expect.stringMatching(/^agent 'refused' failed: spawn refused: .*process:spawn/),
    ]);
    const tree = await cluster.admin.processTree(root.pid);
    expect(tree.nodes.filter((n) => n.parent_pid === workflow.pid)).toEqual([]);
  });
});
