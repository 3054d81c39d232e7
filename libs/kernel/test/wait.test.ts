import { describe, expect, it } from 'vitest';
import { mintToken } from '../src/index.js';
import { refusal, root, runningChild, USAGE, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;
const SPAWN = { resource: 'process:spawn', rights: ['use'], delegable: true };

async function finish(pid: string, fence: string, report: unknown = 'done') {
  return k().worker.complete(pid, 1, fence, {
    terminal: { type: 'captured' },
    report: report as never,
    usage: USAGE,
  });
}

async function until(check: () => Promise<boolean>, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('wait_child_process', () => {
  it('with block=false observes without blocking; ready=false is not failure', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const seen = await k().tools.wait_child_process(
      { pid: parent.pid },
      { child_pid: child.pid, block: false },
    );
    expect(seen).toMatchObject({ ready: false, status: 'running', result_oid: null, outcome: null });
    expect((await k().admin.getProcess(parent.pid)).status).toBe('running');
  });

  it('blocks in waiting_event with a durable wait_state and is woken by the child’s terminal transition', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const before = (await k().admin.getProcess(parent.pid)).state_generation;
    const waiting = k().tools.wait_child_process({ pid: parent.pid }, { child_pid: child.pid });
    await until(async () => (await k().admin.getProcess(parent.pid)).status === 'waiting_event');
    const blocked = await k().admin.getProcess(parent.pid);
    expect(blocked.wait_state).toMatchObject({ type: 'child', child_pid: child.pid });
    expect(blocked.state_generation).toBe(before + 1);
    const done = await finish(child.pid, child.fence, { n: 1 });
    const result = await waiting;
    expect(result).toMatchObject({
      ready: true,
      status: 'exited',
      result_oid: done.result_oid,
      result_withheld: null,
    });
    expect(result.outcome).toMatchObject({ type: 'completed', attempt_id: `${child.pid}:1` });
    const after = await k().admin.getProcess(parent.pid);
    expect(after).toMatchObject({ status: 'running', wait_state: null });
    expect(
      (await k().tools.read_object({ pid: parent.pid }, { oid: result.result_oid ?? '' })).payload,
    ).toEqual({ n: 1 });
  });

  it('returns at once for a child that is already terminal', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    await k().worker.complete(child.pid, 1, child.fence, { terminal: { type: 'timed_out' }, usage: USAGE });
    const started = Date.now();
    const result = await k().tools.wait_child_process(
      { pid: parent.pid },
      { child_pid: child.pid },
      { pollMs: 10_000 },
    );
    expect(Date.now() - started).toBeLessThan(2000);
    expect(result).toMatchObject({
      ready: true,
      status: 'failed',
      outcome: { type: 'timed_out' },
      result_oid: null,
    });
    expect((await k().admin.getProcess(parent.pid)).status).toBe('running');
  });

  it('answers ready=false at the end of the long-poll window and keeps the wait durable', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const result = await k().tools.wait_child_process(
      { pid: parent.pid },
      { child_pid: child.pid },
      { pollMs: 150 },
    );
    expect(result.ready).toBe(false);
    expect((await k().admin.getProcess(parent.pid)).status).toBe('waiting_event');
    // nobody holds the wait now: the terminal transition itself resumes the parent
    await finish(child.pid, child.fence);
    expect(await k().admin.getProcess(parent.pid)).toMatchObject({ status: 'running', wait_state: null });
    const again = await k().tools.wait_child_process({ pid: parent.pid }, { child_pid: child.pid });
    expect(again.ready).toBe(true);
  });

  it('stops early on an AbortSignal', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const result = await k().tools.wait_child_process(
      { pid: parent.pid },
      { child_pid: child.pid },
      { signal: controller.signal, pollMs: 10_000 },
    );
    expect(result.ready).toBe(false);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('answers a blocked wait whose caller was paused meanwhile; the caller stays paused', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const waiting = k().tools.wait_child_process({ pid: parent.pid }, { child_pid: child.pid });
    await until(async () => (await k().admin.getProcess(parent.pid)).status === 'waiting_event');
    await k().admin.signal(parent.pid, { signal: 'pause' });
    await finish(child.pid, child.fence);
    expect(await waiting).toMatchObject({ ready: true, status: 'exited' });
    expect(await k().admin.getProcess(parent.pid)).toMatchObject({ status: 'paused', wait_state: null });
    await k().admin.signal(parent.pid, { signal: 'resume' });
    expect((await k().admin.getProcess(parent.pid)).status).toBe('running');
  });

  it('targets one direct child only', async () => {
    const parent = await root(env);
    const a = await runningChild(env, parent.pid, { inherit_capabilities: [SPAWN] });
    const b = await runningChild(env, parent.pid);
    const grandchild = await k().tools.spawn_child_process({ pid: a.pid }, { goal: 'gc' });
    for (const [caller, target] of [
      [parent.pid, grandchild.pid],
      [a.pid, b.pid],
      [a.pid, parent.pid],
    ] as const) {
      const denied = await refusal(
        k().tools.wait_child_process({ pid: caller }, { child_pid: target, block: false }),
      );
      expect([denied.code, denied.reason]).toEqual(['permission_denied', 'not_direct_child']);
    }
  });

  it('grants a handle to a failed child’s result too', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    await k().tools.process_exit(
      { pid: child.pid },
      { failed: true, reason: 'gave up', payload: { partial: true } },
    );
    const result = await k().tools.wait_child_process({ pid: parent.pid }, { child_pid: child.pid });
    expect(result).toMatchObject({
      ready: true,
      status: 'failed',
      outcome: { type: 'failed', reason: 'gave up' },
    });
    const obj = await k().tools.read_object({ pid: parent.pid }, { oid: result.result_oid ?? '' });
    expect(obj).toMatchObject({
      kind: 'PROCESS_RESULT',
      owner: child.pid,
      payload: { partial: true },
      rights: ['read'],
    });
  });

  it('withholds the result handle when its labels exceed the parent clearance (data flow)', async () => {
    const parent = await root(env, { clearance: ['public'] });
    const child = await runningChild(env, parent.pid, { clearance: ['public', 'secret'] });
    const secret = await k().tools.create_object(
      { pid: child.pid },
      { payload: 'classified', labels: ['secret'] },
    );
    await k().tools.read_object({ pid: child.pid }, { oid: secret.oid });
    await k().tools.process_exit({ pid: child.pid }, { payload: 'derived from the secret' });
    const result = await k().tools.wait_child_process({ pid: parent.pid }, { child_pid: child.pid });
    expect(result).toMatchObject({
      ready: true,
      status: 'exited',
      result_oid: null,
      result_withheld: 'data_flow',
    });
    const view = await k().admin.getProcess(child.pid);
    const denied = await refusal(k().tools.read_object({ pid: parent.pid }, { oid: view.result_oid ?? '' }));
    expect(denied.reason).toBe('no_handle');
  });

  it('holds thousands of blocking waits on a few Redis connections', async () => {
    const n = 1000;
    const pairs = await Promise.all(
      Array.from({ length: n }, async () => {
        const parent = await root(env);
        const spawned = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'c' });
        const claimed = await k().worker.claim(spawned.pid, 1, {
          workerId: 'w',
          tokenHash: mintToken(spawned.pid).tokenHash,
          leaseMs: 60_000,
        });
        return { parent: parent.pid, child: spawned.pid, fence: claimed.fence };
      }),
    );
    const waits = pairs.map((p) => k().tools.wait_child_process({ pid: p.parent }, { child_pid: p.child }));
    await until(async () => k().wakeHub.size === n, 10_000);
    const clients = Number(/connected_clients:(\d+)/.exec(await env.redis.info('clients'))?.[1]);
    expect(clients).toBeLessThanOrEqual(3);
    await Promise.all(pairs.map((p) => finish(p.child, p.fence)));
    const results = await Promise.all(waits);
    expect(results.every((r) => r.ready && r.status === 'exited')).toBe(true);
    expect(k().wakeHub.size).toBe(0);
  }, 60_000);
});
