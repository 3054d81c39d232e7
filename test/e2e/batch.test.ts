import { clusterRunner, fanOut, LibosError, Workflow } from '@libos/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Cluster,
  eventually,
  NO_USAGE,
  numberFromRequest,
  READ_REQUEST,
  type Scratch,
  scratch,
  shImage,
  waitForFile,
  writeResult,
} from '../src/index.js';

let cluster: Cluster;
let files: Scratch;

const squareOutput = (gate: string) =>
  [
    READ_REQUEST,
    numberFromRequest('n'),
    gate,
    writeResult(
      `"status":"completed","output":{"n":%s,"square":%s},${NO_USAGE},"steps":1`,
      '"$n"',
      '"$((n * n))"',
    ),
  ].join('; ');

beforeAll(async () => {
  files = await scratch();
  cluster = await Cluster.start({ workers: 2, concurrency: 8 });
  await cluster.admin.putImage('square', { ...shImage(squareOutput('true')), deadline_ms: 30_000 });
  // Holds until the test creates `$2/release`: the parent's wait can be looked at meanwhile.
  await cluster.admin.putImage('gated-square', {
    ...shImage(squareOutput(waitForFile('"$2/release"', 0.05)), files.dir),
    deadline_ms: 60_000,
  });
});
afterAll(async () => {
  expect(await cluster?.stop()).toEqual([]);
  await files?.remove();
});

const pidNumber = (pid: string) => Number(pid.split('.').pop());

describe('spawn_children and wait_children over HTTP', () => {
  it('spawns 20 children in one call and waits for all of them in one wait', async () => {
    const parent = await cluster.root('batch of 20', {
      goal: 'batch',
      resource_budget: { children: 20, steps: 200 },
    });
    const { children } = await parent.client.spawnChildren({
      children: Array.from({ length: 20 }, (_, n) => ({
        goal: `square ${n}`,
        image: 'square',
        input: { n },
        resource_budget: { children: 0, steps: 5, wall_ms: 60_000 },
      })),
    });
    expect(children.map((c) => pidNumber(c.pid))).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const all = await parent.client.waitChildren({ child_pids: children.map((c) => c.pid), mode: 'all' });
    expect(all).toMatchObject({ ready: true, mode: 'all' });
    expect(all.ended_pids).toEqual(children.map((c) => c.pid));
    for (const [n, one] of all.children.entries()) {
      expect(one).toMatchObject({ ready: true, status: 'exited', outcome: { type: 'completed' } });
      const result = await parent.client.readObject({ oid: one.result_oid ?? '' });
      expect(result.payload).toEqual({ n, square: n * n });
    }
    expect(await parent.client.getProcess()).toMatchObject({ status: 'running', wait_state: null });
  });

  it('refuses a batch whose 5th entry exceeds the budget with 429 naming the entry, and creates nothing', async () => {
    const parent = await cluster.root('over budget', {
      goal: 'over',
      resource_budget: { children: 10, steps: 40 },
    });
    const before = await parent.client.getProcess();
    const refused = await parent.client
      .spawnChildren({
        children: Array.from({ length: 6 }, (_, n) => ({
          goal: `g${n}`,
          image: 'square',
          input: { n },
          resource_budget: { steps: n === 4 ? 9 : 8 },
        })),
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(LibosError);
    expect(refused).toMatchObject({
      code: 'resource_exhausted',
      details: { reason: 'budget', index: 4, requested: 9, remaining: 8 },
    });
    expect((await parent.client.listChildren()).children).toEqual([]);
    expect((await parent.client.getProcess()).resource_budget).toEqual(before.resource_budget);
  });
});

describe('a workflow fan-out on the cluster', () => {
  it('spawns the fan-out with one spawn_children and waits on the set with wait_children', async () => {
    const root = await cluster.root('workflow fan-out', {
      goal: 'fan out',
      resource_budget: { children: 12, steps: 200 },
    });
    const wf = new Workflow({
      runner: clusterRunner({ client: root.client, budget: () => ({ steps: 5, children: 0 }) }),
      maxConcurrent: 12,
    });
    const items = Array.from({ length: 12 }, (_, n) => n);
    const running = fanOut(items, (n) =>
      wf.agentCall({ kind: 'gated-square', input: { n }, label: `square ${n}` }),
    );
    // While the children are held, the parent waits on the whole batch: one durable wait_state.
    const waiting = await eventually(async () => {
      const view = await cluster.admin.getProcess(root.pid);
      return view.wait_state?.type === 'children' && view.wait_state.child_pids.length === 12
        ? view
        : undefined;
    });
    expect(waiting.status).toBe('waiting_event');
    const children = (await root.client.listChildren()).children.sort(
      (a, b) => pidNumber(a.pid) - pidNumber(b.pid),
    );
    expect(children).toHaveLength(12);
    expect(waiting.wait_state).toMatchObject({ mode: 'any', child_pids: children.map((c) => c.pid) });
    // One script created them all: the same creation time, consecutive numbers, goals in item order.
    expect(new Set(children.map((c) => c.created_at)).size).toBe(1);
    expect(children.map((c) => pidNumber(c.pid))).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(children.map((c) => c.goal)).toEqual(items.map((n) => `square ${n}`));
    await files.touch('release');
    const results = await running;
    expect(results.map((r) => (r.ok ? r.value : r.error.message))).toEqual(
      items.map((n) => ({ n, square: n * n })),
    );
    expect(wf.callsMade()).toBe(12);
  });
});
