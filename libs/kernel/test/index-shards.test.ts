import type { ListProcessesInput, ProcessView } from '@libos/protocol';
import { describe, expect, it } from 'vitest';
import { ALL_INDEX_SHARDS, INDEX_SHARDS, Kernel, KernelError, mintToken } from '../src/index.js';
import {
  commandsDuring,
  listPages,
  ON_CLUSTER,
  refusal,
  root,
  runningChild,
  USAGE,
  useKernel,
  wipeIndex,
} from './helpers.js';

// The derived index in shards: a tree's records in its root's shard, listings merged over the
// shards, counts summed, repair per shard; reapers sharing the shards.
const env = useKernel();
const k = () => env.kernel;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Roots until they span at least `shards` index shards (root pids are random). */
async function rootsOverShards(count: number, shards: number): Promise<string[]> {
  const pids: string[] = [];
  while (pids.length < count || new Set(pids.map((pid) => k().keys.indexShardOf(pid))).size < shards) {
    pids.push((await root(env)).pid);
    await sleep(1);
  }
  return pids;
}

/** Newest first, ties by descending pid: the index's order. */
function newestFirst(views: ProcessView[]): string[] {
  return [...views]
    .sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at) || (a.pid < b.pid ? 1 : -1))
    .map((view) => view.pid);
}

const listAll = (query: ListProcessesInput) => listPages(env, query);

describe('the index shards', () => {
  it('writes a big batch in script calls of at most limits.indexBatchMax records, every record written', async () => {
    // A kernel over the same Redis and keys whose calls take 16 records at most.
    const small = new Kernel({
      redis: env.redis,
      keyPrefix: env.prefix,
      limits: { indexBatchMax: 16 },
      onLaunch: () => {},
    });
    try {
      const parent = await root(env, { resource_budget: { children: 50 } });
      await k().flushIndex();
      const entries = Array.from({ length: 40 }, (_, i) => ({ goal: `child ${i}` }));
      const { children } = await small.tools.spawn_children({ pid: parent.pid }, { children: entries });
      const { sent } = await commandsDuring(env.redis, () => small.flushIndex());
      // 40 records (the children, runnable): 16 + 16 + 8
      expect(sent.filter((name) => name === 'evalsha')).toHaveLength(3);
      const shard = k().keys.indexShardOf(parent.pid);
      for (const child of children)
        expect(await env.redis.hexists(k().keys.indexGen(shard), child.pid)).toBe(1);
    } finally {
      await small.close();
    }
  });

  it("puts a tree's records in its root's shard, trees in different shards", async () => {
    const roots = await rootsOverShards(6, 3);
    const children = await Promise.all(
      roots.map((pid) => k().tools.spawn_child_process({ pid }, { goal: 'child' })),
    );
    await k().flushIndex();
    for (const [i, pid] of roots.entries()) {
      const shard = k().keys.indexShardOf(pid);
      const child = children[i]?.pid ?? '';
      expect(k().keys.indexShardOf(child)).toBe(shard);
      for (const other of ALL_INDEX_SHARDS) {
        const held = other === shard;
        expect(await env.redis.hexists(k().keys.indexGen(other), pid)).toBe(held ? 1 : 0);
        expect(await env.redis.hexists(k().keys.indexGen(other), child)).toBe(held ? 1 : 0);
        expect((await env.redis.zscore(k().keys.indexRoots(other), pid)) !== null).toBe(held);
      }
    }
    expect(new Set(roots.map((pid) => k().keys.indexShardOf(pid))).size).toBeGreaterThanOrEqual(3);
  });

  it('lists newest first across the shards, page after page, with a cursor stable under inserts', async () => {
    const since = Date.now() - 1;
    const roots = await rootsOverShards(23, 5);
    const expected = newestFirst(await Promise.all(roots.map((pid) => k().admin.getProcess(pid))));
    const first = await k().admin.listProcesses({ roots: 'true', created_after: String(since), limit: 5 });
    expect(first.processes.map((p) => p.pid)).toEqual(expected.slice(0, 5));
    // a root made now is newer than the cursor: the pages after it do not show it
    const newer = (await root(env)).pid;
    const rest = await listAll({
      roots: 'true',
      created_after: String(since),
      limit: 5,
      cursor: first.next_cursor ?? '',
    });
    expect(rest.pids).toEqual(expected.slice(5));
    expect(rest.pages).toBe(Math.ceil((roots.length - 5) / 5));
    // the whole listing, a status and every process: the same merge
    expect((await listAll({ roots: 'true', created_after: String(since), limit: 4 })).pids).toEqual([
      newer,
      ...expected,
    ]);
    expect((await listAll({ status: 'running', created_after: String(since), limit: 7 })).pids).toEqual([
      newer,
      ...expected,
    ]);
    expect((await listAll({ created_after: String(since), limit: 6 })).pids).toEqual([newer, ...expected]);
  });

  it('refuses a cursor it did not give, changing nothing', async () => {
    for (const cursor of ['nope', '12:', ':p1', `${'9'.repeat(17)}:pabcd`]) {
      const refused = await refusal(k().admin.listProcesses({ roots: 'true', cursor }));
      expect(refused.code).toBe('invalid_argument');
      expect(refused.message).toContain('cursor');
    }
  });

  it('counts processes by status and completions over every shard', async () => {
    const roots = await rootsOverShards(4, 3);
    const before = await k().admin.indexCounts();
    const exited = roots.slice(0, 3);
    for (const pid of exited) await k().tools.process_exit({ pid }, { payload: 'done' });
    const after = await k().admin.indexCounts();
    expect(after.processes.exited - before.processes.exited).toBe(exited.length);
    expect(before.processes.running - after.processes.running).toBe(exited.length);
    const total = (await listAll({ limit: 100 })).pids.length;
    expect(Object.values(after.processes).reduce((a, b) => a + b, 0)).toBe(total);
  });

  it('repairs every shard from the rows and deletes the unsharded index of an older deployment', async () => {
    const roots = await rootsOverShards(5, 3);
    await wipeIndex(env);
    const old = k().keys.unshardedIndex;
    await env.redis.zadd(`${old}all`, 1, 'p-old');
    await env.redis.hset(`${old}gen`, 'p-old', '1:running');
    await env.redis.zadd(`${old}s:running`, 1, 'p-old');
    expect((await listAll({ roots: 'true', limit: 100 })).pids).toEqual([]);
    expect(await k().admin.repairIndex()).toBeGreaterThanOrEqual(roots.length);
    const listed = (await listAll({ roots: 'true', limit: 100 })).pids;
    for (const pid of roots) expect(listed).toContain(pid);
    expect(await env.redis.exists(`${old}all`, `${old}gen`, `${old}s:running`)).toBe(0);
  });

  it('reaps expired leases of the shards it is given only', async () => {
    // Two roots in different shards (the search can return more, some sharing a shard).
    const found = await rootsOverShards(2, 2);
    const shardOf = (pid: string) => k().keys.indexShardOf(pid);
    const roots = [found[0] ?? '', found.find((pid) => shardOf(pid) !== shardOf(found[0] ?? '')) ?? ''];
    const leased = await Promise.all(
      roots.map(async (pid) => {
        const child = await k().tools.spawn_child_process({ pid }, { goal: 'leased', image: 'echo' });
        const token = mintToken(child.pid);
        await k().worker.claim(child.pid, 1, { workerId: 'w', tokenHash: token.tokenHash, leaseMs: 50 });
        return child.pid;
      }),
    );
    await sleep(80);
    const [a, b] = leased;
    const shardA = shardOf(a ?? '');
    const others = ALL_INDEX_SHARDS.filter((shard) => shard !== shardA);
    const first = (await k().worker.reapExpired(100, others)).map((r) => r.pid);
    expect(first).toContain(b);
    expect(first).not.toContain(a);
    expect(await k().worker.reapExpired(100, [shardA])).toEqual([{ pid: a, status: 'paused' }]);
  });

  it('stale launches start at the newest row old enough: rows created after the bound are not read', async () => {
    const parent = (await root(env)).pid;
    const queued = () => k().tools.spawn_child_process({ pid: parent }, { goal: 'queued', image: 'echo' });
    const older = await queued();
    await sleep(5);
    const earlier = Date.now();
    await sleep(5);
    const old = await queued();
    await sleep(5);
    const before = Date.now();
    await sleep(5);
    const young = await Promise.all(Array.from({ length: 3 }, queued));
    // One row a page: the first page is the old launch, not a young row left out (an empty page).
    const first = await k().admin.staleLaunches(before, undefined, 1);
    expect(first.launches.map((launch) => launch.pid)).toEqual([old.pid]);
    // The reaper's next page has a later bound: the cursor, not the bound, says where it goes on.
    const next = await k().admin.staleLaunches(Date.now(), first.next_cursor ?? undefined, 1);
    expect(next.launches.map((launch) => launch.pid)).toEqual([older.pid]);
    // A bound older than the cursor (a clock stepped back) starts at the bound.
    const back = await k().admin.staleLaunches(earlier, first.next_cursor ?? undefined, 1);
    expect(back.launches.map((launch) => launch.pid)).toEqual([older.pid]);
    // Paged on, the pass sees every old launch and none of the young ones.
    const seen = [...first.launches];
    let cursor = first.next_cursor;
    while (cursor) {
      const page = await k().admin.staleLaunches(before, cursor, 1);
      seen.push(...page.launches);
      cursor = page.next_cursor;
    }
    const pids = seen.map((launch) => launch.pid);
    expect(pids).toContain(old.pid);
    for (const one of young) expect(pids).not.toContain(one.pid);
    expect(new Set(pids).size).toBe(pids.length);
  });
});

// On a Cluster (LIBOS_TEST_REDIS=cluster) the kernel always batches: redis-cluster.test.ts.
describe.skipIf(ON_CLUSTER)('index records written by the tree script itself (one server)', () => {
  /** What the index shard of `pid`'s tree holds of it: `gen:status`, its lease, the outcome counts. */
  async function indexed(pid: string) {
    const shard = k().keys.indexShardOf(pid);
    const [entry, lease, outcomes] = await Promise.all([
      env.redis.hget(k().keys.indexGen(shard), pid),
      env.redis.zscore(k().keys.leases(shard), pid),
      env.redis.hgetall(k().keys.outcomeCounts(shard)),
    ]);
    return { status: entry?.split(':')[1], lease, outcomes };
  }

  it("a child's spawn, claim and completion cost no index calls; each is in the index when its call answers", async () => {
    const parent = await root(env);
    await k().flushIndex();
    const before = (await indexed(parent.pid)).outcomes.completed ?? '0';
    const { sent } = await commandsDuring(env.redis, async () => {
      const child = await runningChild(env, parent.pid);
      expect(await indexed(child.pid)).toMatchObject({ status: 'running', lease: expect.any(String) });
      await k().worker.complete(child.pid, 1, child.fence, { terminal: { type: 'captured' }, usage: USAGE });
      const done = await indexed(child.pid);
      expect(done).toMatchObject({ status: 'exited', lease: null });
      // counted once, by the script: nothing is left for a batch
      expect(Number(done.outcomes.completed)).toBe(Number(before) + 1);
      await k().flushIndex();
      expect(Number((await indexed(child.pid)).outcomes.completed)).toBe(Number(before) + 1);
    });
    // spawn, claim, complete: three script calls and no index call
    expect(sent.filter((name) => name === 'evalsha' || name === 'eval')).toHaveLength(3);
  });

  it('with indexInlineMax 0 the records and counts go through the batches instead', async () => {
    const batched = new Kernel({
      redis: env.redis,
      keyPrefix: env.prefix,
      limits: { indexInlineMax: 0, indexBatchMs: 60_000 },
      onLaunch: () => {},
    });
    try {
      const parent = await root(env);
      await k().flushIndex();
      const child = await batched.tools.spawn_child_process({ pid: parent.pid }, { goal: 'batched' });
      expect(await indexed(child.pid)).toMatchObject({ status: undefined });
      const { sent } = await commandsDuring(env.redis, () => batched.flushIndex());
      expect(sent.filter((name) => name === 'evalsha')).toHaveLength(1);
      expect(await indexed(child.pid)).toMatchObject({ status: 'runnable' });
    } finally {
      await batched.close();
    }
  });
});

describe('reaper shards', () => {
  it('split between reapers, each a fair share; one that stops leaves its shards to the others', async () => {
    const a = k().reaperShards(5_000);
    const b = k().reaperShards(5_000);
    expect(await a.claim()).toEqual(ALL_INDEX_SHARDS);
    // b is live now, but every shard is held: it gets its share once a lets go of the excess
    expect(await b.claim()).toEqual([]);
    const half = INDEX_SHARDS / 2;
    const held = await a.claim();
    expect(held).toHaveLength(half);
    const taken = await b.claim();
    expect(taken).toHaveLength(half);
    expect([...held, ...taken].sort((x, y) => x - y)).toEqual(ALL_INDEX_SHARDS);
    // stable while both renew
    expect(await a.claim()).toEqual(held);
    expect(await b.claim()).toEqual(taken);
    await a.release();
    expect(await b.claim()).toEqual(ALL_INDEX_SHARDS);
    await b.release();
  });

  it('go to the survivor once a dead reaper’s hold lapses', async () => {
    const dead = k().reaperShards(300);
    const survivor = k().reaperShards(300);
    await dead.claim();
    await survivor.claim();
    await dead.claim();
    expect(await survivor.claim()).toHaveLength(INDEX_SHARDS / 2);
    // `dead` never claims again (a coordinator that died)
    expect(await survivor.claim()).toHaveLength(INDEX_SHARDS / 2);
    await sleep(350);
    expect(await survivor.claim()).toEqual(ALL_INDEX_SHARDS);
    await survivor.release();
  });

  it('give one repair turn per period, fleet-wide', async () => {
    const a = k().reaperShards(1_000);
    const b = k().reaperShards(1_000);
    expect(await a.repairTurn(300)).toBe(true);
    expect(await b.repairTurn(300)).toBe(false);
    expect(await a.repairTurn(300)).toBe(false);
    await sleep(350);
    expect(await b.repairTurn(300)).toBe(true);
  });

  it('refuse a hold outside its bounds', () => {
    for (const holdMs of [0, 99, 1.5, 86_400_001]) {
      const refused = (() => {
        try {
          k().reaperShards(holdMs);
        } catch (error) {
          return error;
        }
      })();
      expect(refused).toBeInstanceOf(KernelError);
      expect((refused as KernelError).code).toBe('invalid_argument');
    }
  });
});
