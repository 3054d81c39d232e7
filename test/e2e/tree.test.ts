import { shChildLaunch, tsChildLaunch } from '@libos/examples';
import { hostPid, SELF_PID } from '@libos/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster, eventually, isAlive, READ_REQUEST, type Scratch, scratch, shImage } from '../src/index.js';

let cluster: Cluster;
let files: Scratch;

const SPAWN = { resource: 'process:spawn', rights: ['use'] };
const readImage = (name: string) => ({ resource: `image:${name}`, rights: ['read'] });

beforeAll(async () => {
  files = await scratch();
  cluster = await Cluster.start({ workers: 2 });
  // A TypeScript child (serveChild) that acts as itself through the SDK's fromEnv().
  await cluster.admin.putImage('delegate', { ...tsChildLaunch('delegate', 'source'), deadline_ms: 60_000 });
  await cluster.admin.putImage('leaf', shChildLaunch('echo'));
  // A grandchild that would run for 30 s and ignores the cancel.
  await cluster.admin.putImage('slow-leaf', {
    ...shImage(`${READ_REQUEST}; echo ${SELF_PID} >> "$2/slow-leaf.pids"; sleep 30`, files.dir),
    cancel_grace_ms: 10_000,
  });
});
afterAll(async () => {
  const strays = await cluster?.stop();
  await files?.remove();
  expect(strays ?? []).toEqual([]);
});

describe('a grandchild spawned by a child through the SDK', () => {
  it('runs with the authority the parent delegated, and its result comes back up', async () => {
    const parent = await cluster.root('delegate one level down');
    const child = await parent.client.spawn({
      goal: 'get it done by a grandchild',
      image: 'delegate',
      input: { image: 'leaf', goal: 'the real work', input: { x: 1 } },
      inherit_capabilities: [SPAWN, readImage('leaf')],
      resource_budget: { children: 1, wall_ms: 60_000 },
    });
    const waited = await parent.client.wait({ child_pid: child.pid });
    expect(waited).toMatchObject({ status: 'exited', outcome: { type: 'completed' } });
    const { payload } = await parent.client.readObject({ oid: waited.result_oid ?? '' });
    const grandchild = (payload as { grandchild: string }).grandchild;
    expect(payload).toMatchObject({
      // pids of one tree are numbered under its root
      grandchild: expect.stringMatching(new RegExp(`^${parent.pid}\\.\\d+$`)),
      status: 'exited',
      outcome: 'completed',
      // The echo leaf's report is its whole request: the grandchild's own pid, parent and input.
      result: {
        request: {
          request_id: `${grandchild}:1`,
          kind: 'leaf',
          input: { goal: 'the real work', pid: grandchild, parent_pid: child.pid, input: { x: 1 } },
        },
      },
    });
    expect(await cluster.admin.getProcess(grandchild)).toMatchObject({
      parent_pid: child.pid,
      root_pid: parent.pid,
      status: 'exited',
      image: 'leaf',
    });
    // Direct children only: the parent sees its child, not the grandchild.
    const listed = await parent.client.listChildren();
    expect(listed.children.map((c) => c.pid)).toEqual([child.pid]);
    expect((await cluster.admin.getProcess(child.pid)).resource_budget.children.used).toBe(1);
  });

  it('is refused without the delegated spawn or image authority, and the child reports why', async () => {
    const parent = await cluster.root('delegate too little');
    const noSpawn = await parent.client.spawn({
      goal: 'try without process:spawn',
      image: 'delegate',
      input: { image: 'leaf' },
      inherit_capabilities: [readImage('leaf')],
    });
    const noImage = await parent.client.spawn({
      goal: 'try without image:leaf',
      image: 'delegate',
      input: { image: 'leaf' },
      inherit_capabilities: [SPAWN],
    });
    for (const child of [noSpawn, noImage]) {
      const waited = await parent.client.wait({ child_pid: child.pid });
      expect(waited).toMatchObject({
        status: 'failed',
        outcome: {
          type: 'failed',
          reason: expect.stringMatching(/^spawn refused: permission_denied\/missing_capability: /),
        },
      });
      const view = await cluster.admin.getProcess(child.pid);
      expect(view.resource_budget.children.used).toBe(0);
    }
  });
});

describe('terminating a child with a grandchild', () => {
  it('kills both, the grandchild as parent_terminated, and no OS process of theirs is left', async () => {
    const parent = await cluster.root('terminate a tree');
    const child = await parent.client.spawn({
      goal: 'delegate something slow',
      image: 'delegate',
      input: { image: 'slow-leaf' },
      inherit_capabilities: [SPAWN, readImage('slow-leaf')],
    });
    const [leafOsPid] = await eventually(
      async () => {
        const pids = (await files.lines('slow-leaf.pids')).map(hostPid);
        return pids.length > 0 && pids.every((pid) => pid !== undefined) ? (pids as number[]) : undefined;
      },
      { withinMs: 30_000, what: 'the grandchild to run' },
    );
    const [grandchild] = await eventually(async () => {
      const view = await cluster.admin.listProcesses({ status: 'running' });
      const found = view.processes.filter((p) => p.parent_pid === child.pid).map((p) => p.pid);
      return found.length > 0 ? found : undefined;
    });
    const started = performance.now();
    await parent.client.signal({
      child_pid: child.pid,
      signal: 'terminate',
      reason: 'tree no longer needed',
    });
    const waited = await parent.client.wait({ child_pid: child.pid });
    expect(waited).toMatchObject({
      status: 'killed',
      outcome: { type: 'killed', reason: 'tree no longer needed' },
    });
    const leafView = await eventually(async () => {
      const view = await cluster.admin.getProcess(grandchild!);
      return view.status === 'killed' ? view : undefined;
    });
    expect(leafView.outcome).toMatchObject({ type: 'killed', reason: 'parent_terminated' });
    await eventually(() => (isAlive(leafOsPid!) ? undefined : true), {
      what: 'the grandchild OS process to go',
    });
    // Neither waited for the 10 s grace of the grandchild's image.
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(await cluster.straysAfter()).toEqual([]);
  });
});
