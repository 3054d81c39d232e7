import { shChildLaunch } from '@libos/examples';
import { hostPid, SELF_PID } from '@libos/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Cluster,
  eventually,
  isAlive,
  procState,
  READ_REQUEST,
  type Scratch,
  scratch,
  shImage,
  sleep,
  writeResult,
} from '../src/index.js';

let cluster: Cluster;
let files: Scratch;

/** The host pids of what a child wrote to `name` as SELF_PID, once there are `count` of them. */
function osPids(name: string, count = 1): Promise<number[]> {
  return eventually(
    async () => {
      const pids = (await files.lines(name)).map(hostPid);
      return pids.length >= count && pids.every((pid) => pid !== undefined) ? (pids as number[]) : undefined;
    },
    { what: `${count} pid(s) in ${name}` },
  );
}

beforeAll(async () => {
  files = await scratch();
  cluster = await Cluster.start({ workers: 2 });
  // 10 ticks of 50 ms (well under a second of work) under a 2 s deadline that a 2.5 s pause would exceed.
  await cluster.admin.putImage('ticker', {
    ...shImage(
      `${READ_REQUEST}; echo ${SELF_PID} > "$2/ticker.pid"; i=0; while [ $i -lt 10 ]; do i=$((i+1)); echo $i >> "$2/ticks"; sleep 0.05; done; ${writeResult('"status":"completed","output":"ticked"')}`,
      files.dir,
    ),
    deadline_ms: 2_000,
    cancel_grace_ms: 100,
  });
  // Ignores the cancel: it never reads stdin again, so only the kill after the grace ends it.
  await cluster.admin.putImage('stubborn', {
    ...shImage(`${READ_REQUEST}; echo ${SELF_PID} > "$2/stubborn.pid"; sleep 30`, files.dir),
    cancel_grace_ms: 600,
  });
  // Stops at stdin EOF and reports `interrupted` with 1 prompt token and 1 step; a long grace it never needs.
  await cluster.admin.putImage('cancel-aware', { ...shChildLaunch('cancel-aware'), cancel_grace_ms: 5_000 });
  // Two background sleeps: OS grandchildren in the child's process group; a grace terminate must not wait for.
  await cluster.admin.putImage('grandparent', {
    ...shChildLaunch('spawns-grandchildren', files.path('group.pids')),
    cancel_grace_ms: 10_000,
  });
});
afterAll(async () => {
  const strays = await cluster?.stop();
  await files?.remove();
  expect(strays ?? []).toEqual([]);
});

describe('pause and resume', () => {
  it('pause freezes the running child without consuming its deadline; resume continues it', async () => {
    const parent = await cluster.root('pause a ticker');
    const child = await parent.client.spawn({ goal: 'tick', image: 'ticker' });
    const [osPid] = await osPids('ticker.pid');
    await eventually(async () => ((await files.lines('ticks')).length >= 2 ? true : undefined));

    const paused = await parent.client.signal({ child_pid: child.pid, signal: 'pause', reason: 'hold on' });
    expect(paused.status).toBe('paused');
    await eventually(() => (procState(osPid!) === 'T' ? true : undefined), { what: 'SIGSTOP (state T)' });
    await sleep(150); // a tick in flight when the group stopped may still land
    const frozenAt = (await files.lines('ticks')).length;
    expect(frozenAt).toBeLessThan(10);
    await sleep(2_500); // longer than the whole deadline
    expect(procState(osPid!)).toBe('T');
    expect((await files.lines('ticks')).length).toBe(frozenAt);
    expect((await cluster.admin.getProcess(child.pid)).status).toBe('paused');

    const resumed = await parent.client.signal({ child_pid: child.pid, signal: 'resume' });
    expect(resumed.status).toBe('running');
    const waited = await parent.client.wait({ child_pid: child.pid });
    expect(waited).toMatchObject({ status: 'exited', outcome: { type: 'completed' } });
    expect(await files.lines('ticks')).toHaveLength(10);
    // The measured wall time leaves the pause out.
    expect(waited.outcome?.usage?.wall_ms).toBeLessThan(2_000);
  });
});

describe('cancel', () => {
  it('kills a child that ignores stdin EOF once the image’s grace is over', async () => {
    const parent = await cluster.root('cancel a stubborn child');
    const child = await parent.client.spawn({ goal: 'ignore the cancel', image: 'stubborn' });
    const [osPid] = await osPids('stubborn.pid');
    const started = performance.now();
    const signalled = await parent.client.signal({
      child_pid: child.pid,
      signal: 'cancel',
      reason: 'not needed',
    });
    expect(signalled.pending_signal).toEqual({ signal: 'cancel', reason: 'not needed' });
    const waited = await parent.client.wait({ child_pid: child.pid });
    const took = performance.now() - started;
    expect(waited).toMatchObject({ status: 'killed', outcome: { type: 'killed', reason: 'not needed' } });
    expect(took).toBeGreaterThanOrEqual(600);
    expect(took).toBeLessThan(600 + 4_000);
    expect(isAlive(osPid!)).toBe(false);
  });

  it('a cancel-aware child ends well before its grace, and its usage is kept', async () => {
    const parent = await cluster.root('cancel a cancel-aware child');
    const child = await parent.client.spawn({ goal: 'stop when asked', image: 'cancel-aware' });
    await eventually(async () =>
      (await cluster.admin.getProcess(child.pid)).status === 'running' ? true : undefined,
    );
    // `running` is set at the claim, before the sandbox is up: let the child read its request (a
    // cancel before that rightly leaves it no request to account for).
    await sleep(300);
    const started = performance.now();
    await parent.client.signal({ child_pid: child.pid, signal: 'cancel' });
    const waited = await parent.client.wait({ child_pid: child.pid });
    expect(performance.now() - started).toBeLessThan(2_500);
    expect(waited).toMatchObject({
      status: 'killed',
      result_oid: null,
      outcome: { type: 'killed', usage: { prompt_tokens: 1, steps: 1 } },
    });
    const view = await cluster.admin.getProcess(parent.pid);
    expect(view.resource_budget.tokens.used).toBe(1);
  });
});

describe('terminate', () => {
  it('kills the child’s whole process group at once, grandchildren included', async () => {
    const parent = await cluster.root('terminate a group');
    const child = await parent.client.spawn({ goal: 'start grandchildren', image: 'grandparent' });
    const group = await osPids('group.pids', 3);
    expect(group.every(isAlive)).toBe(true);
    const started = performance.now();
    await parent.client.signal({ child_pid: child.pid, signal: 'terminate', reason: 'stop now' });
    const waited = await parent.client.wait({ child_pid: child.pid });
    expect(waited).toMatchObject({ status: 'killed', outcome: { type: 'killed', reason: 'stop now' } });
    // Not the image's 10 s grace: at once.
    expect(performance.now() - started).toBeLessThan(3_000);
    await eventually(() => (group.some(isAlive) ? undefined : true), {
      withinMs: 2_000,
      what: 'the group to be gone',
    });
    expect(await cluster.straysAfter()).toEqual([]);
  });
});
