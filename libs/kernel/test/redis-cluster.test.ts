import type { Cluster } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { root, runningChild, USAGE, useKernel, wipeIndex } from './helpers.js';

// The kernel on a real 3-master Redis Cluster (an ioredis Cluster client): the reads that span
// trees, repairIndex and the wake-ups, with trees on every master. The whole kernel suite runs on
// a cluster with LIBOS_TEST_REDIS=cluster.
const env = useKernel({ cluster: true });
const k = () => env.kernel;
const MIN_TREES = 12;

/** Trees whose `seq` hash each master holds. */
async function treesPerMaster(): Promise<number[]> {
  const masters = (env.client as Cluster).nodes('master');
  return Promise.all(masters.map(async (node) => (await node.keys(`${env.prefix}{*}:seq`)).length));
}

describe('the kernel on a 3-master Redis Cluster', () => {
  it('lists, finds stale launches and rebuilds the index across every master; waits are woken on each', async () => {
    // Root pids are random, so 12 trees miss a master about one run in 40: add trees until each
    // master holds one.
    const roots = await Promise.all(Array.from({ length: MIN_TREES }, () => root(env)));
    while (roots.length < 60 && (await treesPerMaster()).some((n) => n === 0)) roots.push(await root(env));
    const perMaster = await treesPerMaster();
    expect(perMaster).toHaveLength(3);
    expect(perMaster.every((n) => n > 0)).toBe(true);
    const trees = roots.length;

    // One runnable (never claimed) and one running child per tree.
    const runnable = await Promise.all(
      roots.map((r) => k().tools.spawn_child_process({ pid: r.pid }, { goal: 'queued' })),
    );
    const running = await Promise.all(roots.map((r) => runningChild(env, r.pid)));

    // Blocking waits on every tree, each woken by its child's exit on that tree's shard.
    const waits = running.map((child, i) =>
      k().tools.wait_child_process({ pid: roots[i]!.pid }, { child_pid: child.pid }),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    await Promise.all(
      running.map((child) =>
        k().worker.complete(child.pid, 1, child.fence, { terminal: { type: 'captured' }, usage: USAGE }),
      ),
    );
    for (const [i, answer] of (await Promise.all(waits)).entries()) {
      expect(answer).toMatchObject({ ready: true, child_pid: running[i]!.pid, status: 'exited' });
    }

    // A Cluster's index shards are other slots than the trees': the records and the completion
    // counts go through the kernel's batches, not the tree scripts.
    await k().flushIndex();
    expect((await k().admin.indexCounts()).completions).toMatchObject({ completed: trees });

    // staleLaunches reads each candidate row per tree.
    const stale = await k().admin.staleLaunches(Date.now() + 1000);
    expect(stale.launches.map((l) => l.pid).sort()).toEqual(runnable.map((s) => s.pid).sort());

    // Listings by status, by tree and of roots.
    const exited = await k().admin.listProcesses({ status: 'exited', limit: 100 });
    expect(exited.processes.map((p) => p.pid).sort()).toEqual(running.map((c) => c.pid).sort());
    const rootsListed = await k().admin.listProcesses({ roots: 'true', limit: 100 });
    expect(rootsListed.processes.map((p) => p.pid).sort()).toEqual(roots.map((r) => r.pid).sort());
    const tree = await k().admin.listProcesses({ root: roots[5]!.pid });
    expect(tree.processes).toHaveLength(3);

    // The index is derived: wiped, repairIndex finds every row on every master.
    await wipeIndex(env);
    expect((await k().admin.listProcesses({ status: 'exited' })).processes).toEqual([]);
    expect(await k().admin.repairIndex()).toBe(3 * trees);
    // The index is in shards, one slot each, spread over the masters: no one slot carries it.
    const shardsPerMaster = await Promise.all(
      (env.client as Cluster)
        .nodes('master')
        .map(async (node) => (await node.keys(`${env.prefix}{idx*}:gen`)).length),
    );
    expect(shardsPerMaster.filter((n) => n > 0).length).toBeGreaterThan(1);
    // Counts go one pipeline per shard (a pipeline stays in one slot).
    expect((await k().admin.indexCounts()).processes).toMatchObject({ exited: trees, runnable: trees });
    const again = await k().admin.listProcesses({ status: 'exited', limit: 100 });
    expect(again.processes.map((p) => p.pid).sort()).toEqual(running.map((c) => c.pid).sort());
    expect((await k().admin.staleLaunches(Date.now() + 1000)).launches).toHaveLength(trees);
  });
});
