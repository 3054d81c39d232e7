import type { ControlNotice } from '@libos/protocol';
import { describe, expect, it } from 'vitest';
import { mintToken } from '../src/index.js';
import { refusal, root, runningChild, USAGE, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;
const SPAWN = { resource: 'process:spawn', rights: ['use'], delegable: true };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean | Promise<boolean>, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await sleep(10);
  }
}

function claimArgs(pid: string, leaseMs = 60_000) {
  return { workerId: 'w', tokenHash: mintToken(pid).tokenHash, leaseMs };
}

describe('signal_child_process on queued children', () => {
  it('pause holds a queued child; resume starts a new attempt with a new job id', async () => {
    const parent = await root(env);
    const child = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g' });
    const paused = await k().tools.signal_child_process(
      { pid: parent.pid },
      { child_pid: child.pid, signal: 'pause' },
    );
    expect(paused).toMatchObject({ status: 'paused', state_generation: 2 });
    const stale = await refusal(k().worker.claim(child.pid, 1, claimArgs(child.pid)));
    expect([stale.code, stale.reason]).toEqual(['failed_precondition', 'not_runnable']);
    const resumed = await k().tools.signal_child_process(
      { pid: parent.pid },
      { child_pid: child.pid, signal: 'resume' },
    );
    expect(resumed.status).toBe('runnable');
    expect((await k().admin.getProcess(child.pid)).attempt).toBe(2);
    expect(env.launches.filter((l) => l.pid === child.pid).map((l) => l.job_id)).toEqual([
      `${child.pid}-a1`,
      `${child.pid}-a2`,
    ]);
    const old = await refusal(k().worker.claim(child.pid, 1, claimArgs(child.pid)));
    expect(old.reason).toBe('superseded');
    expect((await k().worker.claim(child.pid, 2, claimArgs(child.pid))).attempt_id).toBe(`${child.pid}:2`);
  });

  it('cancel kills a queued child at once and returns its reservation', async () => {
    const parent = await root(env, { resource_budget: { tokens: 100 } });
    const child = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g' });
    expect((await k().admin.getProcess(parent.pid)).resource_budget.tokens.reserved).toBe(50);
    const killed = await k().tools.signal_child_process(
      { pid: parent.pid },
      { child_pid: child.pid, signal: 'cancel', reason: 'no longer needed' },
    );
    expect(killed.status).toBe('killed');
    const view = await k().admin.getProcess(child.pid);
    expect(view.outcome).toEqual({
      type: 'killed',
      reason: 'no longer needed',
      attempt_id: `${child.pid}:1`,
    });
    expect((await k().admin.getProcess(parent.pid)).resource_budget.tokens.reserved).toBe(0);
  });
});

describe('signal_child_process on running children', () => {
  it('pause and resume keep the attempt and reach the worker through the control channel', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const notices: ControlNotice[] = [];
    const release = await k().worker.watchControl(child.pid, (n) => notices.push(n));
    await k().tools.signal_child_process(
      { pid: parent.pid },
      { child_pid: child.pid, signal: 'pause', reason: 'hold on' },
    );
    const renewed = await k().worker.renew(child.pid, 1, child.fence, 60_000);
    expect(renewed).toMatchObject({ status: 'paused', paused: true, pending_signal: null });
    await k().tools.signal_child_process({ pid: parent.pid }, { child_pid: child.pid, signal: 'resume' });
    await until(() => notices.length === 2);
    expect(notices).toEqual([
      { pid: child.pid, attempt: 1, signal: 'pause', reason: 'hold on' },
      { pid: child.pid, attempt: 1, signal: 'resume' },
    ]);
    release();
    expect(await k().admin.getProcess(child.pid)).toMatchObject({ status: 'running', attempt: 1 });
  });

  it('cancel and terminate record a pending signal; the completion then ends killed, whatever it reports', async () => {
    const parent = await root(env);
    for (const signal of ['cancel', 'terminate'] as const) {
      const child = await runningChild(env, parent.pid);
      const notices: ControlNotice[] = [];
      const release = await k().worker.watchControl(child.pid, (n) => notices.push(n));
      const pending = await k().tools.signal_child_process(
        { pid: parent.pid },
        { child_pid: child.pid, signal },
      );
      expect(pending).toMatchObject({ status: 'running', pending_signal: { signal, reason: signal } });
      await until(() => notices.length === 1);
      expect(notices[0]?.signal).toBe(signal);
      expect((await k().worker.renew(child.pid, 1, child.fence, 60_000)).pending_signal?.signal).toBe(signal);
      const done = await k().worker.complete(child.pid, 1, child.fence, {
        terminal: { type: 'captured' },
        report: 'finished anyway',
        usage: USAGE,
      });
      expect(done).toMatchObject({ status: 'killed', result_oid: null });
      const view = await k().admin.getProcess(child.pid);
      expect(view.outcome).toMatchObject({ type: 'killed', reason: signal, usage: USAGE });
      release();
    }
  });

  it('kills without rollback: effects already committed stay', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const sent = await k().tools.send_process_message(
      { pid: child.pid },
      { to: 'parent', body: 'partial result' },
    );
    await k().tools.signal_child_process({ pid: parent.pid }, { child_pid: child.pid, signal: 'terminate' });
    await k().worker.complete(child.pid, 1, child.fence, {
      terminal: { type: 'failed', reason: 'killed' },
      usage: USAGE,
    });
    const inbox = await k().tools.read_process_messages({ pid: parent.pid }, {});
    expect(inbox.messages.map((m) => m.message_id)).toEqual([sent.message_id]);
  });

  it('pause and resume cannot clear an event wait', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid, { inherit_capabilities: [SPAWN] });
    const grandchild = await k().tools.spawn_child_process({ pid: child.pid }, { goal: 'gc' });
    await k().tools.wait_child_process({ pid: child.pid }, { child_pid: grandchild.pid }, { pollMs: 50 });
    expect((await k().admin.getProcess(child.pid)).status).toBe('waiting_event');
    await k().tools.signal_child_process({ pid: parent.pid }, { child_pid: child.pid, signal: 'pause' });
    const paused = await k().admin.getProcess(child.pid);
    expect(paused).toMatchObject({
      status: 'paused',
      wait_state: { type: 'child', child_pid: grandchild.pid },
    });
    await k().tools.signal_child_process({ pid: parent.pid }, { child_pid: child.pid, signal: 'resume' });
    expect(await k().admin.getProcess(child.pid)).toMatchObject({
      status: 'waiting_event',
      wait_state: { type: 'child', child_pid: grandchild.pid },
    });
    // the event, not the signal, ends the wait; a paused waiter stays paused
    await k().tools.signal_child_process({ pid: parent.pid }, { child_pid: child.pid, signal: 'pause' });
    const frozen = await refusal(
      k().tools.signal_child_process({ pid: child.pid }, { child_pid: grandchild.pid, signal: 'cancel' }),
    );
    expect([frozen.code, frozen.reason]).toEqual(['failed_precondition', 'paused_caller']);
    await k().admin.signal(grandchild.pid, { signal: 'cancel' });
    expect(await k().admin.getProcess(child.pid)).toMatchObject({ status: 'paused', wait_state: null });
    await k().tools.signal_child_process({ pid: parent.pid }, { child_pid: child.pid, signal: 'resume' });
    expect((await k().admin.getProcess(child.pid)).status).toBe('running');
  });

  it('refuses a terminal child, a non-direct child, a double pause and a resume of a running child', async () => {
    const parent = await root(env);
    const a = await runningChild(env, parent.pid, { inherit_capabilities: [SPAWN] });
    const grandchild = await k().tools.spawn_child_process({ pid: a.pid }, { goal: 'gc' });
    const far = await refusal(
      k().tools.signal_child_process({ pid: parent.pid }, { child_pid: grandchild.pid, signal: 'pause' }),
    );
    expect([far.code, far.reason]).toEqual(['permission_denied', 'not_direct_child']);
    const running = await refusal(
      k().tools.signal_child_process({ pid: parent.pid }, { child_pid: a.pid, signal: 'resume' }),
    );
    expect(running.reason).toBe('not_paused');
    await k().tools.signal_child_process({ pid: parent.pid }, { child_pid: a.pid, signal: 'pause' });
    const twice = await refusal(
      k().tools.signal_child_process({ pid: parent.pid }, { child_pid: a.pid, signal: 'pause' }),
    );
    expect(twice.reason).toBe('already_paused');
    const b = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'b' });
    await k().tools.signal_child_process({ pid: parent.pid }, { child_pid: b.pid, signal: 'cancel' });
    const dead = await refusal(
      k().tools.signal_child_process({ pid: parent.pid }, { child_pid: b.pid, signal: 'cancel' }),
    );
    expect([dead.code, dead.reason]).toEqual(['failed_precondition', 'terminal']);
    const bad = await refusal(
      k().tools.signal_child_process({ pid: parent.pid }, { child_pid: b.pid, signal: 'stop' as never }),
    );
    expect(bad.code).toBe('invalid_argument');
  });
});

describe('stale execution recovery', () => {
  it('pauses an expired lease as stale_execution behind a host-only gate; only an operator resumes it', async () => {
    const parent = await root(env);
    const spawned = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g' });
    const minted = mintToken(spawned.pid);
    const claimed = await k().worker.claim(spawned.pid, 1, {
      workerId: 'w',
      tokenHash: minted.tokenHash,
      leaseMs: 100,
    });
    expect((await k().authenticate(minted.token)).pid).toBe(spawned.pid);
    await sleep(150);
    const recovered = await k().worker.reapExpired();
    expect(recovered).toContainEqual({ pid: spawned.pid, status: 'paused' });
    const view = await k().admin.getProcess(spawned.pid);
    expect(view).toMatchObject({
      status: 'paused',
      pause_reason: 'stale_execution',
      resume_gate: 'host',
      attempt: 1,
    });
    expect((await refusal(k().authenticate(minted.token))).code).toBe('unauthenticated');
    const late = await refusal(
      k().worker.complete(spawned.pid, 1, claimed.fence, {
        terminal: { type: 'captured' },
        report: 1,
        usage: USAGE,
      }),
    );
    expect([late.code, late.reason]).toEqual(['failed_precondition', 'superseded']);
    expect((await refusal(k().worker.renew(spawned.pid, 1, claimed.fence, 1000))).reason).toBe('superseded');
    const gated = await refusal(
      k().tools.signal_child_process({ pid: parent.pid }, { child_pid: spawned.pid, signal: 'resume' }),
    );
    expect([gated.code, gated.reason]).toEqual(['failed_precondition', 'host_gate']);
    expect((await k().worker.reapExpired()).some((r) => r.pid === spawned.pid)).toBe(false);
    const resumed = await k().admin.signal(spawned.pid, { signal: 'resume' });
    expect(resumed.status).toBe('runnable');
    expect((await k().admin.getProcess(spawned.pid)).attempt).toBe(2);
    expect(env.launches.some((l) => l.job_id === `${spawned.pid}-a2`)).toBe(true);
  });

  it('kills an expired lease when a cancel was pending', async () => {
    const parent = await root(env);
    const spawned = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g' });
    await k().worker.claim(spawned.pid, 1, claimArgs(spawned.pid, 100));
    await k().tools.signal_child_process({ pid: parent.pid }, { child_pid: spawned.pid, signal: 'cancel' });
    await sleep(150);
    expect(await k().worker.reapExpired()).toContainEqual({ pid: spawned.pid, status: 'killed' });
    expect((await k().admin.getProcess(spawned.pid)).outcome).toMatchObject({
      type: 'killed',
      reason: 'cancel',
    });
  });

  it('leaves a renewed lease alone', async () => {
    const parent = await root(env);
    const spawned = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g' });
    const claimed = await k().worker.claim(spawned.pid, 1, claimArgs(spawned.pid, 200));
    await sleep(120);
    await k().worker.renew(spawned.pid, 1, claimed.fence, 5_000);
    await sleep(120);
    expect((await k().worker.reapExpired()).some((r) => r.pid === spawned.pid)).toBe(false);
    expect((await k().admin.getProcess(spawned.pid)).status).toBe('running');
  });
});

describe('a parent’s terminal transition', () => {
  it('terminates its nonterminal children and releases unmerged child memory', async () => {
    const parent = await root(env);
    const queued = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'q' });
    const live = await runningChild(env, parent.pid);
    const done = await runningChild(env, parent.pid);
    const kept = await k().tools.create_object({ pid: done.pid }, { payload: 'child memory' });
    await k().tools.process_exit({ pid: done.pid }, { payload: 'result' });
    const notices: ControlNotice[] = [];
    const release = await k().worker.watchControl(live.pid, (n) => notices.push(n));
    await k().tools.process_exit({ pid: parent.pid }, {});
    expect(await k().admin.getProcess(queued.pid)).toMatchObject({
      status: 'killed',
      outcome: { type: 'killed', reason: 'parent_terminated' },
    });
    expect((await k().admin.getProcess(live.pid)).pending_signal).toEqual({
      signal: 'terminate',
      reason: 'parent_terminated',
    });
    await until(() => notices.length === 1);
    expect(notices[0]).toMatchObject({ signal: 'terminate', reason: 'parent_terminated' });
    release();
    const obj = await env.redis.exists(`${k().keys.treeOf(done.pid)}o:${kept.oid.split('/o')[1]}`);
    expect(obj).toBe(0);
    expect(
      (await k().worker.complete(live.pid, 1, live.fence, { terminal: { type: 'captured' }, usage: USAGE }))
        .status,
    ).toBe('killed');
    expect(await refusal(k().authenticate(parent.token ?? ''))).toMatchObject({ code: 'unauthenticated' });
  });
});
