import { Cluster } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Kernel } from '../src/index.js';
import { everyOneEnded } from '../src/process-tools.js';
import { refusal, root, runningChild, USAGE, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;
const SPAWN = { resource: 'process:spawn', rights: ['use'], delegable: true };
const BUDGET = { tokens: 1000, cost_usd: 1, steps: 100, wall_ms: 10_000, children: 10 };

async function finish(pid: string, fence: string, report: unknown = 'done') {
  return k().worker.complete(pid, 1, fence, {
    terminal: { type: 'captured' },
    report: report as never,
    usage: USAGE,
  });
}

async function until(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Counts the script calls Redis runs whose arguments `match` (MONITOR on every master: what the
 * server really executed, whatever the client does).
 */
async function scriptCalls(match: (args: string) => boolean) {
  const masters = env.client instanceof Cluster ? env.client.nodes('master') : [env.redis];
  let count = 0;
  const monitors = await Promise.all(masters.map((node) => node.monitor()));
  for (const monitor of monitors) {
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (/^evalsha$|^eval$/i.test(args[0] ?? '') && match(args.join(' '))) count += 1;
    });
  }
  return {
    count: () => count,
    stop: async () => {
      for (const monitor of monitors) monitor.disconnect();
    },
  };
}

/** A kernel over the same Redis and keys with other limits. */
function kernelWith(limits: ConstructorParameters<typeof Kernel>[0]['limits']) {
  return new Kernel({ redis: env.redis, keyPrefix: env.prefix, limits, onLaunch: () => {} });
}

describe('spawn_children', () => {
  it('creates every child in one call, each with its own goal and input, pids in order, launches in order', async () => {
    const parent = await root(env, { resource_budget: { children: 20 } });
    const launched = env.launches.length;
    const entries = Array.from({ length: 12 }, (_, i) => ({ goal: `part ${i}`, input: { i } }));
    const { children } = await k().tools.spawn_children({ pid: parent.pid }, { children: entries });
    expect(children).toHaveLength(12);
    const numbers = children.map((c) => Number(c.pid.split('.').pop()));
    expect(new Set(numbers).size).toBe(12);
    for (let i = 1; i < numbers.length; i++) expect(numbers[i]).toBe((numbers[i - 1] ?? 0) + 1);
    for (const [i, child] of children.entries()) {
      expect(child).toMatchObject({ status: 'runnable', image: 'echo', state_generation: 1 });
      const view = await k().tools.get_process({ pid: parent.pid }, { pid: child.pid });
      expect(view).toMatchObject({ goal: `part ${i}`, input: { i }, parent_pid: parent.pid });
    }
    expect(env.launches.slice(launched).map((l) => l.pid)).toEqual(children.map((c) => c.pid));
    const p = (await k().admin.getProcess(parent.pid)).resource_budget.children;
    expect(p).toMatchObject({ used: 12, remaining: 8 });
  });

  it('leaves the parent’s budget and the children’s exactly as the same spawns one by one would', async () => {
    const entries = [
      { goal: 'a' },
      { goal: 'b', resource_budget: { tokens: 100 } },
      { goal: 'c', image: 'other' },
      { goal: 'd', resource_budget: { steps: 10, children: 2 } },
    ];
    const one = await root(env, { resource_budget: BUDGET });
    const singles = [];
    for (const entry of entries) singles.push(await k().tools.spawn_child_process({ pid: one.pid }, entry));
    const many = await root(env, { resource_budget: BUDGET });
    const batch = await k().tools.spawn_children({ pid: many.pid }, { children: entries });
    expect(batch.children.map((c) => c.resource_budget)).toEqual(singles.map((c) => c.resource_budget));
    expect((await k().admin.getProcess(many.pid)).resource_budget).toEqual(
      (await k().admin.getProcess(one.pid)).resource_budget,
    );
  });

  it('is all or nothing: a 5th entry over the budget creates nothing and leaves the budget untouched', async () => {
    const parent = await root(env, { resource_budget: BUDGET });
    const before = await k().admin.getProcess(parent.pid);
    const launched = env.launches.length;
    const entries = [
      ...Array.from({ length: 4 }, (_, i) => ({ goal: `fits ${i}`, resource_budget: { tokens: 200 } })),
      // 800 reserved by the first four: 200 are left, this asks 201
      { goal: 'too much', resource_budget: { tokens: 201 } },
      { goal: 'after' },
    ];
    const denied = await refusal(k().tools.spawn_children({ pid: parent.pid }, { children: entries }));
    expect([denied.code, denied.reason]).toEqual(['resource_exhausted', 'budget']);
    expect(denied.details).toMatchObject({ index: 4, dimension: 'tokens', requested: 201, remaining: 200 });
    expect(denied.message).toMatch(/^children\[4\]: /);
    const after = await k().admin.getProcess(parent.pid);
    expect(after.resource_budget).toEqual(before.resource_budget);
    expect(after.state_generation).toBe(before.state_generation);
    expect((await k().tools.list_child_processes({ pid: parent.pid }, {})).children).toEqual([]);
    expect(env.launches.length).toBe(launched);
    // no number was taken: the next child is the tree's first
    const next = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'first' });
    expect(next.pid).toBe(`${parent.pid}.1`);
  });

  it('refuses a batch that exceeds the children budget only by its count', async () => {
    const parent = await root(env, { resource_budget: { children: 3 } });
    const denied = await refusal(
      k().tools.spawn_children(
        { pid: parent.pid },
        { children: [1, 2, 3, 4].map((i) => ({ goal: `g${i}` })) },
      ),
    );
    expect([denied.code, denied.reason, denied.details?.index]).toEqual(['resource_exhausted', 'budget', 3]);
    expect((await k().tools.list_child_processes({ pid: parent.pid }, {})).children).toEqual([]);
  });

  it('names the entry with an unknown image and creates nothing', async () => {
    const parent = await root(env, {
      capabilities: [
        { resource: 'process:spawn', rights: ['use'] },
        { resource: 'image:*', rights: ['read'] },
      ],
    });
    const denied = await refusal(
      k().tools.spawn_children(
        { pid: parent.pid },
        { children: [{ goal: 'a' }, { goal: 'b', image: 'other' }, { goal: 'c', image: 'no-such-image' }] },
      ),
    );
    expect([denied.code, denied.reason, denied.details?.index]).toEqual(['not_found', 'unknown_image', 2]);
    expect(denied.message).toContain('children[2]');
    expect((await k().tools.list_child_processes({ pid: parent.pid }, {})).children).toEqual([]);
  });

  it('names the entry refused by the script (no read authority on its image, a path outside the cwd)', async () => {
    const parent = await root(env, { capabilities: [SPAWN], cwd: '/work/a' });
    const image = await refusal(
      k().tools.spawn_children(
        { pid: parent.pid },
        { children: [{ goal: 'a' }, { goal: 'b', image: 'other' }] },
      ),
    );
    expect([image.code, image.reason, image.details?.index]).toEqual([
      'permission_denied',
      'missing_capability',
      1,
    ]);
    const path = await refusal(
      k().tools.spawn_children(
        { pid: parent.pid },
        { children: [{ goal: 'a', inherited_paths: ['/etc/passwd'] }, { goal: 'b' }] },
      ),
    );
    expect([path.code, path.reason, path.details?.index]).toEqual(['permission_denied', 'path', 0]);
    expect((await k().tools.list_child_processes({ pid: parent.pid }, {})).children).toEqual([]);
  });

  it('names the entry whose input is too large', async () => {
    const small = kernelWith({ maxPayloadBytes: 100 });
    try {
      const parent = await root(env);
      const denied = await refusal(
        small.tools.spawn_children(
          { pid: parent.pid },
          {
            children: [
              { goal: 'a', input: 'x' },
              { goal: 'b', input: 'y'.repeat(200) },
            ],
          },
        ),
      );
      expect([denied.code, denied.reason, denied.details?.index]).toEqual([
        'payload_too_large',
        'payload',
        1,
      ]);
      expect((await k().tools.list_child_processes({ pid: parent.pid }, {})).children).toEqual([]);
    } finally {
      await small.close();
    }
  });

  it('bounds the batch by spawnBatchMax (configurable)', async () => {
    const bounded = kernelWith({ spawnBatchMax: 5 });
    try {
      const parent = await root(env, { resource_budget: { children: 20 } });
      const goals = (n: number) => Array.from({ length: n }, (_, i) => ({ goal: `g${i}` }));
      const denied = await refusal(bounded.tools.spawn_children({ pid: parent.pid }, { children: goals(6) }));
      expect([denied.code, denied.reason]).toEqual(['invalid_argument', 'batch_too_large']);
      expect(denied.details).toMatchObject({ limit: 5, given: 6 });
      expect((await k().tools.list_child_processes({ pid: parent.pid }, {})).children).toEqual([]);
      const done = await bounded.tools.spawn_children({ pid: parent.pid }, { children: goals(5) });
      expect(done.children).toHaveLength(5);
    } finally {
      await bounded.close();
    }
    expect(k().limits.spawnBatchMax).toBe(256);
  });

  it('refuses an empty batch and a malformed entry as invalid_argument', async () => {
    const parent = await root(env);
    const empty = await refusal(k().tools.spawn_children({ pid: parent.pid }, { children: [] }));
    expect(empty.code).toBe('invalid_argument');
    const bad = await refusal(
      k().tools.spawn_children({ pid: parent.pid }, { children: [{ goal: 'a' }, { goal: '' }] }),
    );
    expect(bad.code).toBe('invalid_argument');
    expect(JSON.stringify(bad.details)).toContain('children.1.goal');
  });

  it('needs process:spawn authority, like a single spawn', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const denied = await refusal(
      k().tools.spawn_children({ pid: child.pid }, { children: [{ goal: 'grandchild' }] }),
    );
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'missing_capability']);
  });

  it('puts every launch on the pool of its own image', async () => {
    const parent = await root(env, {
      capabilities: [
        { resource: 'process:spawn', rights: ['use'] },
        { resource: 'image:other', rights: ['read'] },
      ],
    });
    const launched = env.launches.length;
    await k().tools.spawn_children(
      { pid: parent.pid },
      { children: [{ goal: 'a' }, { goal: 'b', image: 'other' }, { goal: 'c' }] },
    );
    expect(env.launches.slice(launched).map((l) => l.pool)).toEqual(['default', 'gpu', 'default']);
  });
});

describe('spawn_children with onLaunches', () => {
  it('hands the batch’s launches to onLaunches at once, in order', async () => {
    const batches: string[][] = [];
    const kernel = new Kernel({
      redis: env.redis,
      keyPrefix: env.prefix,
      onLaunch: () => {
        throw new Error('not one by one');
      },
      onLaunches: (launches) => {
        batches.push(launches.map((l) => l.pid));
      },
    });
    try {
      const parent = await root(env);
      const { children } = await kernel.tools.spawn_children(
        { pid: parent.pid },
        { children: [{ goal: 'a' }, { goal: 'b' }, { goal: 'c' }] },
      );
      expect(batches).toEqual([children.map((c) => c.pid)]);
    } finally {
      await kernel.close();
    }
  });
});

describe('wait_children', () => {
  async function three() {
    const parent = await root(env);
    const a = await runningChild(env, parent.pid);
    const b = await runningChild(env, parent.pid);
    const c = await runningChild(env, parent.pid);
    return { parent, a, b, c, pids: [a.pid, b.pid, c.pid] };
  }

  it('mode any: blocks with a durable wait_state and returns when one ends, naming it', async () => {
    const { parent, b, pids } = await three();
    const before = (await k().admin.getProcess(parent.pid)).state_generation;
    const waiting = k().tools.wait_children({ pid: parent.pid }, { child_pids: pids });
    await until(async () => (await k().admin.getProcess(parent.pid)).status === 'waiting_event');
    const blocked = await k().admin.getProcess(parent.pid);
    expect(blocked.wait_state).toMatchObject({ type: 'children', child_pids: pids, mode: 'any' });
    expect(blocked.state_generation).toBe(before + 1);
    const done = await finish(b.pid, b.fence, { n: 2 });
    const result = await waiting;
    expect(result).toMatchObject({ ready: true, mode: 'any', ended_pids: [b.pid] });
    expect(result.children.map((c) => [c.child_pid, c.ready, c.status])).toEqual([
      [pids[0], false, 'running'],
      [b.pid, true, 'exited'],
      [pids[2], false, 'running'],
    ]);
    expect(result.children[1]).toMatchObject({ result_oid: done.result_oid, outcome: { type: 'completed' } });
    expect(await k().admin.getProcess(parent.pid)).toMatchObject({ status: 'running', wait_state: null });
    expect(
      (await k().tools.read_object({ pid: parent.pid }, { oid: done.result_oid ?? '' })).payload,
    ).toEqual({
      n: 2,
    });
  });

  it('mode all: one ending does not end the wait; the last one does', async () => {
    const { parent, a, b } = await three();
    const c = await runningChild(env, parent.pid);
    const set = [a.pid, b.pid];
    let settled = false;
    const waiting = k()
      .tools.wait_children({ pid: parent.pid }, { child_pids: set, mode: 'all' })
      .finally(() => {
        settled = true;
      });
    await until(async () => (await k().admin.getProcess(parent.pid)).status === 'waiting_event');
    await finish(a.pid, a.fence);
    // another child outside the set ending changes nothing either
    await finish(c.pid, c.fence);
    await new Promise((r) => setTimeout(r, 300));
    expect(settled).toBe(false);
    expect(await k().admin.getProcess(parent.pid)).toMatchObject({
      status: 'waiting_event',
      wait_state: { type: 'children', child_pids: set, mode: 'all' },
    });
    await finish(b.pid, b.fence);
    const result = await waiting;
    expect(result).toMatchObject({ ready: true, mode: 'all', ended_pids: set });
    expect(result.children.every((one) => one.ready && one.status === 'exited')).toBe(true);
    expect((await k().admin.getProcess(parent.pid)).status).toBe('running');
  });

  it('mode all re-checks once when the last of the set ends, not once per exit', async () => {
    const parent = await root(env, { resource_budget: { children: 40 } });
    const set = [];
    for (let i = 0; i < 30; i += 1) set.push(await runningChild(env, parent.pid));
    const rechecks = await scriptCalls(
      (args) => args.includes(parent.pid) && args.includes('"recheck":true'),
    );
    try {
      const waiting = k().tools.wait_children(
        { pid: parent.pid },
        { child_pids: set.map((c) => c.pid), mode: 'all' },
        { pollMs: 30_000 },
      );
      await until(async () => (await k().admin.getProcess(parent.pid)).status === 'waiting_event');
      // one at a time, each exit's wake delivered before the next: before, each was a re-check
      for (const child of set) {
        await finish(child.pid, child.fence);
        await new Promise((r) => setTimeout(r, 20));
      }
      const result = await waiting;
      expect(result).toMatchObject({ ready: true, mode: 'all' });
      expect(result.ended_pids).toHaveLength(30);
      // MONITOR lines come on their own connection: let any late one arrive before counting
      await new Promise((r) => setTimeout(r, 300));
      expect(rechecks.count()).toBe(1);
    } finally {
      await rechecks.stop();
    }
  });

  it('mode all: an exit published before the reply of a check that missed it is not forgotten', () => {
    // The order a real race gives (hard to force over loopback): a check runs, a child ends and
    // its publish is handled here before that check's reply, which does not name it.
    const gate = everyOneEnded(['a', 'b', 'c']);
    const answer = (ended_pids: string[]) => ({
      ready: false,
      mode: 'all' as const,
      ended_pids,
      children: [],
    });
    gate.checked(answer(['a']));
    expect(gate.admits(1)).toBe(false); // b's publish
    gate.checked(answer(['a'])); // a reply from before b ended
    expect(gate.admits(2)).toBe(true); // c's publish: all three known ended
  });

  it('mode all: a window that ends with exits not yet checked answers with them', async () => {
    const { parent, a, b } = await three();
    const waiting = k().tools.wait_children(
      { pid: parent.pid },
      { child_pids: [a.pid, b.pid], mode: 'all' },
      { pollMs: 1_000 },
    );
    await until(async () => (await k().admin.getProcess(parent.pid)).status === 'waiting_event');
    await finish(a.pid, a.fence);
    const result = await waiting;
    expect(result).toMatchObject({ ready: false, ended_pids: [a.pid] });
    expect(result.children.map((c) => c.status)).toEqual(['exited', 'running']);
  });

  it('returns at once when a child of the set already ended, and with block=false observes only', async () => {
    const { parent, a, pids } = await three();
    const look = await k().tools.wait_children({ pid: parent.pid }, { child_pids: pids, block: false });
    expect(look).toMatchObject({ ready: false, ended_pids: [] });
    expect((await k().admin.getProcess(parent.pid)).status).toBe('running');
    await finish(a.pid, a.fence);
    const result = await k().tools.wait_children(
      { pid: parent.pid },
      { child_pids: pids },
      { pollMs: 10_000 },
    );
    expect(result).toMatchObject({ ready: true, ended_pids: [a.pid] });
    const all = await k().tools.wait_children(
      { pid: parent.pid },
      { child_pids: pids, mode: 'all', block: false },
    );
    expect(all).toMatchObject({ ready: false, ended_pids: [a.pid] });
  });

  it('answers ready=false at the end of the window; the wait stays durable and the terminal transition resumes the parent', async () => {
    const { parent, a, b } = await three();
    const set = [a.pid, b.pid];
    const started = Date.now();
    const result = await k().tools.wait_children(
      { pid: parent.pid },
      { child_pids: set, mode: 'all' },
      { pollMs: 200 },
    );
    expect(result.ready).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect((await k().admin.getProcess(parent.pid)).status).toBe('waiting_event');
    // nobody holds the wait now: the transitions themselves keep the record
    await finish(a.pid, a.fence);
    expect(await k().admin.getProcess(parent.pid)).toMatchObject({
      status: 'waiting_event',
      wait_state: { type: 'children', mode: 'all' },
    });
    await finish(b.pid, b.fence);
    expect(await k().admin.getProcess(parent.pid)).toMatchObject({ status: 'running', wait_state: null });
  });

  it('mode any is resumed by the terminal transition of any child of the set with nobody waiting', async () => {
    const { parent, c, pids } = await three();
    const controller = new AbortController();
    const waiting = k().tools.wait_children(
      { pid: parent.pid },
      { child_pids: pids },
      { signal: controller.signal, pollMs: 10_000 },
    );
    await until(async () => (await k().admin.getProcess(parent.pid)).status === 'waiting_event');
    controller.abort();
    expect((await waiting).ready).toBe(false);
    await k().tools.signal_child_process({ pid: parent.pid }, { child_pid: c.pid, signal: 'cancel' });
    // a live child is asked to stop; its worker completes the attempt as killed
    await k().worker.complete(c.pid, 1, c.fence, {
      terminal: { type: 'failed', reason: 'killed' },
      usage: USAGE,
    });
    expect(await k().admin.getProcess(parent.pid)).toMatchObject({ status: 'running', wait_state: null });
  });

  it('refuses a pid that is not a direct child (naming its entry), a duplicate and an oversized set', async () => {
    const { parent, a, pids } = await three();
    const spawner = await runningChild(env, parent.pid, { inherit_capabilities: [SPAWN] });
    const grandchild = await runningChild(env, spawner.pid);
    const before = (await k().admin.getProcess(parent.pid)).state_generation;
    const notChild = await refusal(
      k().tools.wait_children({ pid: parent.pid }, { child_pids: [a.pid, grandchild.pid] }),
    );
    expect([notChild.code, notChild.reason, notChild.details?.index]).toEqual([
      'permission_denied',
      'not_direct_child',
      1,
    ]);
    expect(notChild.message).toContain(grandchild.pid);
    const other = await root(env);
    const foreign = await refusal(k().tools.wait_children({ pid: parent.pid }, { child_pids: [other.pid] }));
    expect(foreign.code).toBe('not_found');
    const dup = await refusal(
      k().tools.wait_children({ pid: parent.pid }, { child_pids: [a.pid, pids[1] ?? '', a.pid] }),
    );
    expect([dup.code, dup.reason, dup.details?.index]).toEqual(['invalid_argument', 'duplicate_pid', 2]);
    const bounded = kernelWith({ waitChildrenMax: 2 });
    try {
      const big = await refusal(bounded.tools.wait_children({ pid: parent.pid }, { child_pids: pids }));
      expect([big.code, big.reason]).toEqual(['invalid_argument', 'batch_too_large']);
      expect(big.details).toMatchObject({ limit: 2, given: 3 });
    } finally {
      await bounded.close();
    }
    expect(k().limits.waitChildrenMax).toBe(1024);
    // nothing changed: no wait was recorded
    expect(await k().admin.getProcess(parent.pid)).toMatchObject({
      status: 'running',
      wait_state: null,
      state_generation: before,
    });
  });
});
