import { describe, expect, it } from 'vitest';
import { mintToken } from '../src/index.js';
import { refusal, root, runningChild, USAGE, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;

describe('claim', () => {
  it('moves runnable -> running once per attempt, with a fence and the launch spec', async () => {
    const parent = await root(env, { cwd: '/work' });
    const spawned = await k().tools.spawn_child_process(
      { pid: parent.pid },
      { goal: 'do it', input: { x: 1 }, inherited_paths: ['a.txt'], schema: { type: 'object' } },
    );
    const minted = mintToken(spawned.pid);
    const claimed = await k().worker.claim(spawned.pid, 1, {
      workerId: 'w1',
      tokenHash: minted.tokenHash,
      leaseMs: 5000,
    });
    expect(claimed).toMatchObject({
      pid: spawned.pid,
      parent_pid: parent.pid,
      attempt: 1,
      attempt_id: `${spawned.pid}:1`,
      goal: 'do it',
      input: { x: 1 },
      schema: { type: 'object' },
      image: 'echo',
      cwd: '/work',
      inherited_paths: [{ path: '/work/a.txt', kind: 'file', access: 'read' }],
    });
    expect(claimed.image_spec.args).toContain('{result_file}');
    expect(claimed.fence).toMatch(/^[0-9a-f]{32}$/);
    const again = await refusal(
      k().worker.claim(spawned.pid, 1, { workerId: 'w2', tokenHash: minted.tokenHash, leaseMs: 5000 }),
    );
    expect([again.code, again.reason]).toEqual(['failed_precondition', 'not_runnable']);
    const wrong = await refusal(
      k().worker.claim(spawned.pid, 2, { workerId: 'w2', tokenHash: minted.tokenHash, leaseMs: 5000 }),
    );
    expect(wrong.reason).toBe('superseded');
    expect((await k().admin.getProcess(spawned.pid)).status).toBe('running');
  });

  it('a retried claim whose first call was applied gets the same claim (same fence); another launch does not', async () => {
    const parent = await root(env);
    const spawned = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'retried' });
    const { tokenHash } = mintToken(spawned.pid);
    const options = { workerId: 'w1', tokenHash, leaseMs: 5000 };
    // the first call's reply is "lost": the worker only knows the call may have been applied
    const first = await k().worker.claim(spawned.pid, 1, options);
    const retried = await k().worker.claim(spawned.pid, 1, options);
    expect(retried.fence).toBe(first.fence);
    expect(retried.attempt_id).toBe(first.attempt_id);
    // the same worker with another launch's token (a duplicate job) is refused as before
    const other = await refusal(
      k().worker.claim(spawned.pid, 1, { ...options, tokenHash: mintToken(spawned.pid).tokenHash }),
    );
    expect(other.reason).toBe('not_runnable');
  });

  it('claims a launch given no schema with schema null', async () => {
    const parent = await root(env);
    const spawned = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'plain' });
    const { tokenHash } = mintToken(spawned.pid);
    const claimed = await k().worker.claim(spawned.pid, 1, { workerId: 'w1', tokenHash, leaseMs: 5000 });
    expect(claimed.schema).toBeNull();
  });

  it('stores only the token hash: the plaintext is the worker’s, dead at terminal', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    expect(await k().authenticate(child.token)).toMatchObject({ pid: child.pid });
    const secret = child.token.slice(child.token.lastIndexOf('.') + 1);
    const row = await env.redis.hgetall(k().keys.row(child.pid));
    expect(Object.values(row).some((value) => value.includes(secret))).toBe(false);
    await k().worker.complete(child.pid, 1, child.fence, { terminal: { type: 'no_report' }, usage: USAGE });
    const dead = await refusal(k().authenticate(child.token));
    expect(dead.code).toBe('unauthenticated');
  });
});

describe('authenticate', () => {
  it('accepts a root’s token and refuses forged or swapped ones', async () => {
    const a = await root(env);
    const b = await root(env);
    expect(await k().authenticate(a.token ?? '')).toMatchObject({ pid: a.pid });
    const secretB = (b.token ?? '').slice((b.token ?? '').lastIndexOf('.') + 1);
    for (const token of ['', 'nonsense', `${a.pid}.${secretB}`, `${a.pid}.AAAAAAAAAAAAAAAAAAAAAAAA`]) {
      expect((await refusal(k().authenticate(token))).code).toBe('unauthenticated');
    }
  });

  it('creates a launched root as runnable, without a token until its worker claims it', async () => {
    const created = await k().admin.createRoot({ goal: 'batch job', image: 'other', launch: true });
    expect(created).toMatchObject({ status: 'runnable', token: null });
    expect(env.launches.find((l) => l.pid === created.pid)).toMatchObject({ attempt: 1, pool: 'gpu' });
    const noImage = await refusal(k().admin.createRoot({ goal: 'x', launch: true }));
    expect([noImage.code, noImage.reason]).toEqual(['invalid_argument', 'no_image']);
  });
});

describe('complete', () => {
  it('maps every contract terminal to a typed outcome', async () => {
    const parent = await root(env);
    const cases = [
      ['captured', 'exited', 'completed'],
      ['no_report', 'failed', 'no_report'],
      ['max_steps', 'failed', 'max_steps_exhausted'],
      ['context_yield', 'failed', 'context_yield'],
      ['timed_out', 'failed', 'timed_out'],
      ['failed', 'failed', 'failed'],
    ] as const;
    for (const [terminal, status, type] of cases) {
      const child = await runningChild(env, parent.pid);
      const done = await k().worker.complete(child.pid, 1, child.fence, {
        terminal: {
          type: terminal,
          ...(terminal === 'failed' ? { reason: 'malformed result file: no status' } : {}),
        },
        ...(terminal === 'captured' ? { report: { ok: true } } : {}),
        usage: { ...USAGE, cost_usd: 0.25 },
        exit_code: 3,
        unaccounted: "the child's result carries no usage",
      });
      expect(done.status).toBe(status);
      const view = await k().admin.getProcess(child.pid);
      expect(view.outcome).toMatchObject({
        type,
        attempt_id: `${child.pid}:1`,
        exit_code: 3,
        steps: 2,
        usage: { ...USAGE, cost_usd: 0.25 },
        unaccounted: "the child's result carries no usage",
      });
      if (terminal === 'failed') expect(view.outcome?.reason).toBe('malformed result file: no status');
      if (terminal === 'captured') {
        expect(view.result_oid).toBe(done.result_oid);
        // the child is terminal: it can no longer act, only its parent can look now
        const gone = await refusal(k().tools.read_object({ pid: child.pid }, { oid: done.result_oid ?? '' }));
        expect(gone.reason).toBe('terminal_caller');
      } else {
        expect(view.result_oid).toBeNull();
      }
    }
  });

  it('refuses a superseded attempt, a wrong fence and a second completion', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const body = { terminal: { type: 'captured' as const }, report: 1, usage: USAGE };
    const fence = await refusal(k().worker.complete(child.pid, 1, 'f'.repeat(32), body));
    expect([fence.code, fence.reason]).toEqual(['failed_precondition', 'superseded']);
    const attempt = await refusal(k().worker.complete(child.pid, 2, child.fence, body));
    expect(attempt.reason).toBe('superseded');
    expect((await k().admin.getProcess(child.pid)).status).toBe('running');
    await k().worker.complete(child.pid, 1, child.fence, body);
    const second = await refusal(k().worker.complete(child.pid, 1, child.fence, body));
    expect([second.code, second.reason]).toEqual(['failed_precondition', 'terminal']);
    const badRenew = await refusal(k().worker.renew(child.pid, 1, 'x', 1000));
    expect(badRenew.reason).toBe('superseded');
  });

  it('after a process_exit in the same attempt charges usage only', async () => {
    const parent = await root(env, { resource_budget: { tokens: 1000 } });
    const child = await runningChild(env, parent.pid);
    await k().tools.process_exit({ pid: child.pid }, { payload: { from: 'exit' } });
    const renewed = await k().worker.renew(child.pid, 1, child.fence, 1000);
    expect(renewed.status).toBe('exited');
    const done = await k().worker.complete(child.pid, 1, child.fence, {
      terminal: { type: 'failed', reason: 'exit 1' },
      usage: USAGE,
    });
    expect(done.status).toBe('exited');
    const view = await k().admin.getProcess(child.pid);
    expect(view.outcome?.type).toBe('completed');
    expect(view.resource_budget.tokens.used).toBe(15);
    expect((await k().admin.getProcess(parent.pid)).resource_budget.tokens).toEqual({
      limit: 1000,
      reserved: 0,
      used: 15,
      remaining: 985,
    });
  });

  it('rejects a malformed completion as invalid_argument without changing anything', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const bad = await refusal(
      k().worker.complete(child.pid, 1, child.fence, {
        terminal: { type: 'finished' },
        usage: USAGE,
      } as never),
    );
    expect(bad.code).toBe('invalid_argument');
    expect((await k().admin.getProcess(child.pid)).status).toBe('running');
  });

  it('fails an attempt whose report is too large instead of losing the completion', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const done = await k().worker.complete(child.pid, 1, child.fence, {
      terminal: { type: 'captured' },
      report: 'x'.repeat(k().limits.maxPayloadBytes + 1),
      usage: USAGE,
    });
    expect(done.status).toBe('failed');
    expect((await k().admin.getProcess(child.pid)).outcome?.reason).toMatch(/exceeds/);
  });
});
