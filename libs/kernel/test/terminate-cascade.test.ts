import type { ControlNotice } from '@libos/protocol';
import { describe, expect, it } from 'vitest';
import { mintToken } from '../src/index.js';
import { Scripts } from '../src/scripts.js';
import { keysMatching, refusal, root, USAGE, useKernel } from './helpers.js';

// A parent's end terminates its children at most BATCH per script call (lua/lib_terminal.lua).
const BATCH = 50;
const env = useKernel({ limits: { terminateBatch: BATCH } });
const k = () => env.kernel;
const SPAWN = { resource: 'process:spawn', rights: ['use'], delegable: true };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await sleep(20);
  }
}

/** `n` queued children of `parent`, spawned 250 per `spawn_children` call. */
async function spawnMany(parent: string, n: number, extra: Record<string, unknown> = {}): Promise<string[]> {
  const pids: string[] = [];
  while (pids.length < n) {
    const count = Math.min(250, n - pids.length);
    const children = Array.from({ length: count }, (_, i) => ({ goal: `c${pids.length + i}`, ...extra }));
    const spawned = await k().tools.spawn_children({ pid: parent }, { children });
    pids.push(...spawned.children.map((child) => child.pid));
  }
  return pids;
}

function claimArgs(pid: string, leaseMs = 60_000) {
  return { workerId: 'w', tokenHash: mintToken(pid).tokenHash, leaseMs };
}

/**
 * Every script call that changes rows of the tree publishes them once on its `ev` channel: per
 * call, how many rows other than the root's it changed (the children it ended or asked to stop).
 */
async function rowsPerCall(rootPid: string) {
  const calls: number[] = [];
  const release = await k().wakeHub.listen(k().keys.treeTopic(rootPid), (event) => {
    if (event.type !== 'message') return;
    const rows = JSON.parse(event.message) as [string, number, string][];
    calls.push(rows.filter(([pid]) => pid !== rootPid).length);
  });
  return { calls, release };
}

/** The exit publishes (`<status>`) seen for each pid: what wakes their waiters. */
async function exitWakes(pids: string[]) {
  const seen = new Map<string, string[]>();
  const releases = await Promise.all(
    pids.map((pid) =>
      k().wakeHub.listen(k().keys.exitTopic(pid), (event) => {
        if (event.type !== 'message') return;
        seen.set(pid, [...(seen.get(pid) ?? []), event.message.split(' ')[0] ?? '']);
      }),
    ),
  );
  const release = () => {
    for (const one of releases) one();
  };
  return { seen, release };
}

async function statuses(pids: string[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const view of await Promise.all(pids.map((pid) => k().admin.getProcess(pid)))) {
    counts.set(view.status, (counts.get(view.status) ?? 0) + 1);
  }
  return counts;
}

async function everyKilledByParent(pids: string[]): Promise<void> {
  for (const view of await Promise.all(pids.map((pid) => k().admin.getProcess(pid)))) {
    expect(view, view.pid).toMatchObject({
      status: 'killed',
      outcome: { type: 'killed', reason: 'parent_terminated' },
    });
  }
}

const cascadeQueue = (rootPid: string) => env.redis.exists(`${k().keys.tree(rootPid)}tq`);

describe('a parent’s end over many children', () => {
  it('ends 1,000 live children at most a batch per script call, wakes each, releases budgets and memory, then retention deletes the tree', async () => {
    const r = await root(env, { retention_ms: 0, resource_budget: { children: 2_000, tokens: 1_000_000 } });
    const pids = await spawnMany(r.pid, 1_000, { resource_budget: { tokens: 100 } });
    // three run on a worker (they are asked to stop); one ended before its parent, keeping memory
    const running = await Promise.all(
      [pids[0], pids[400], pids[999]].map(async (pid = '') => ({
        pid,
        fence: (await k().worker.claim(pid, 1, claimArgs(pid))).fence,
      })),
    );
    const ended = pids[1] ?? '';
    await k().worker.claim(ended, 1, claimArgs(ended));
    const kept = await k().tools.create_object({ pid: ended }, { payload: 'unmerged child memory' });
    await k().tools.process_exit({ pid: ended }, {});
    const queued = pids.filter((pid) => pid !== ended && !running.some((run) => run.pid === pid));
    expect(queued).toHaveLength(996);
    expect((await k().admin.getProcess(r.pid)).resource_budget.tokens?.reserved).toBe(99_900);

    const notices: ControlNotice[] = [];
    const watches = await Promise.all(
      running.map((run) => k().worker.watchControl(run.pid, (notice) => notices.push(notice))),
    );
    const wakes = await exitWakes(queued);
    const perCall = await rowsPerCall(r.pid);
    await k().tools.process_exit({ pid: r.pid }, {});

    // answered once the cascade is done: every queued child killed, nothing left queued
    await everyKilledByParent(queued);
    expect(await cascadeQueue(r.pid)).toBe(0);
    for (const run of running) {
      expect((await k().admin.getProcess(run.pid)).pending_signal).toEqual({
        signal: 'terminate',
        reason: 'parent_terminated',
      });
    }
    // each killed child's exit was published once (its waiters' wake); each worker was told
    await until(() => queued.every((pid) => wakes.seen.get(pid)?.length === 1));
    expect(queued.every((pid) => wakes.seen.get(pid)?.[0] === 'killed')).toBe(true);
    await until(() => notices.length === 3);
    // no script call ended (or asked to stop) more than a batch of children; ~1,000 / 50 calls did
    await until(() => perCall.calls.reduce((a, b) => a + b, 0) >= queued.length + running.length);
    expect(Math.max(...perCall.calls)).toBe(BATCH);
    expect(perCall.calls.filter((n) => n > 0).length).toBeGreaterThanOrEqual(1_000 / BATCH);
    wakes.release();
    perCall.release();
    for (const release of watches) release();

    // budgets: only the three still running hold their reservation; memory: the ended child's
    expect((await k().admin.getProcess(r.pid)).resource_budget.tokens?.reserved).toBe(300);
    const objectKey = `${k().keys.tree(r.pid)}o:${kept.oid.split('/o')[1]}`;
    expect(await env.redis.exists(objectKey)).toBe(0);
    for (const run of running) {
      const done = await k().worker.complete(run.pid, 1, run.fence, {
        terminal: { type: 'captured' },
        usage: USAGE,
      });
      expect(done.status).toBe('killed');
    }
    expect((await k().admin.getProcess(r.pid)).resource_budget.tokens?.reserved).toBe(0);

    // retention (period 0): every child is due, then the root; the tree goes entirely
    for (let i = 0; i < 20 && (await env.redis.exists(k().keys.row(r.pid))) === 1; i++) {
      await k().retention.sweep();
    }
    expect(await keysMatching(env, `${env.prefix}{${r.pid}}:*`)).toEqual([]);
  }, 120_000);

  it('ends a nested tree (stale children with children of their own) in batches', async () => {
    const r = await root(env);
    // three children and two of each one's twenty children ran and lost their worker: stale,
    // each with children of its own still queued
    const middle: string[] = [];
    const leaves: string[] = [];
    for (let i = 0; i < 3; i++) {
      const [child = ''] = await spawnMany(r.pid, 1, { inherit_capabilities: [SPAWN] });
      await k().worker.claim(child, 1, claimArgs(child, 200));
      const grandchildren = await spawnMany(child, 20, { inherit_capabilities: [SPAWN] });
      middle.push(child);
      for (const grandchild of grandchildren.slice(0, 2)) {
        await k().worker.claim(grandchild, 1, claimArgs(grandchild, 200));
        leaves.push(...(await spawnMany(grandchild, 30)));
        middle.push(grandchild);
      }
      leaves.push(...grandchildren.slice(2));
    }
    const stale = new Set<string>();
    await until(async () => {
      for (const recovery of await k().worker.reapExpired(1000)) stale.add(recovery.pid);
      return middle.every((pid) => stale.has(pid));
    });
    const descendants = [...middle, ...leaves];
    expect(descendants).toHaveLength(3 + 60 + 180);

    const perCall = await rowsPerCall(r.pid);
    await k().tools.process_exit({ pid: r.pid }, {});
    await everyKilledByParent(descendants);
    expect(await cascadeQueue(r.pid)).toBe(0);
    await until(() => perCall.calls.reduce((a, b) => a + b, 0) >= descendants.length);
    perCall.release();
    expect(Math.max(...perCall.calls)).toBeLessThanOrEqual(BATCH);
    expect(perCall.calls.filter((n) => n > 0).length).toBeGreaterThanOrEqual(descendants.length / BATCH);
  }, 60_000);
});

describe('a cascade left unfinished (its coordinator died after the first call)', () => {
  /** The exit script alone, as a coordinator that died right after it would have left things. */
  async function exitOnly(pid: string) {
    const scripts = new Scripts(env.client);
    return scripts.tree('exit', k().keys.seq(pid), k().keys.tree(pid), { caller: pid, tb: BATCH });
  }

  it('refuses to start a queued child of the ended parent, and the sweep finishes the cascade', async () => {
    const r = await root(env);
    const pids = await spawnMany(r.pid, 300);
    const reply = await exitOnly(r.pid);
    expect(reply.cascadePending).toBe(true);
    expect(await cascadeQueue(r.pid)).toBe(1);
    expect(await statuses(pids)).toEqual(
      new Map([
        ['killed', BATCH],
        ['runnable', 300 - BATCH],
      ]),
    );

    const waiting = pids.at(-1) ?? '';
    const refused = await refusal(k().worker.claim(waiting, 1, claimArgs(waiting)));
    expect([refused.code, refused.reason]).toEqual(['failed_precondition', 'not_runnable']);
    expect(refused.message).toContain(`parent ${r.pid} has ended`);
    expect((await k().admin.getProcess(waiting)).status).toBe('runnable');

    // the kernel marks the tree for the sweep before it continues: a death after that
    if (!reply.gc) throw new Error('an unfinished cascade marks its tree for the sweep');
    expect(reply.gc.at).toBeLessThanOrEqual(Date.now());
    k().retention.mark(r.pid, reply.gc);
    await k().retention.sweep();
    await everyKilledByParent(pids);
    expect(await cascadeQueue(r.pid)).toBe(0);
  }, 60_000);

  it('is found by the index repair when the coordinator died before marking the tree', async () => {
    const r = await root(env);
    const pids = await spawnMany(r.pid, 120);
    expect((await exitOnly(r.pid)).cascadePending).toBe(true);
    // nothing marked the tree: the sweep alone does not visit it
    await k().retention.sweep();
    expect((await statuses(pids)).get('runnable')).toBe(120 - BATCH);
    await k().admin.repairIndex();
    await k().retention.sweep();
    await everyKilledByParent(pids);
    expect(await cascadeQueue(r.pid)).toBe(0);
  }, 60_000);
});
