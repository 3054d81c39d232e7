import { describe, expect, it } from 'vitest';
import type { ArchiveRecord } from '../src/index.js';
import { refusal, root, runningChild, USAGE, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;
// long enough that the steps before the first sweep fit in it on a loaded host
const RETENTION_MS = 1_500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function finished(parent: string) {
  const child = await runningChild(env, parent);
  await k().worker.complete(child.pid, 1, child.fence, {
    terminal: { type: 'captured' },
    report: { ok: child.pid },
    usage: USAGE,
  });
  return child.pid;
}

async function treeKeys(rootPid: string): Promise<string[]> {
  return env.redis.keys(`${env.prefix}{${rootPid}}:*`);
}

describe('retention', () => {
  it('deletes a waited-on child a retention period after its end and keeps one not yet waited on', async () => {
    const r = await root(env, { retention_ms: RETENTION_MS });
    const waited = await finished(r.pid);
    const endedBy = Date.now();
    const unwaited = await finished(r.pid);
    const wait = await k().tools.wait_child_process({ pid: r.pid }, { child_pid: waited, block: false });
    expect(wait.ready).toBe(true);

    // Not yet a retention period after its end: nothing goes (only checkable while that holds:
    // a loaded host may take longer than the period to get here).
    const early = await k().retention.sweep();
    if (Date.now() - endedBy < RETENTION_MS) expect(early.deleted).toBe(0);
    await sleep(RETENTION_MS + 50);
    const report = await k().retention.sweep();
    expect(early.deleted + report.deleted).toBe(1);

    const gone = await refusal(k().admin.getProcess(waited));
    expect(gone.code).toBe('not_found');
    expect(gone.reason).toBe('deleted');
    expect(gone.message).toContain('deleted after its retention period');
    const asParent = await refusal(k().tools.get_process({ pid: r.pid }, { pid: waited }));
    expect(asParent.reason).toBe('deleted');
    const listed = await k().tools.list_child_processes({ pid: r.pid }, { include_terminal: true });
    expect(listed.children.map((c) => c.pid)).toEqual([unwaited]);
    expect((await k().admin.getProcess(unwaited)).status).toBe('exited');
    // its result object and handle went with it
    await k().flushIndex();
    const shard = k().keys.indexShardOf(r.pid);
    expect(await env.redis.zscore(k().keys.indexStatus(shard, 'exited'), waited)).toBeNull();
    expect(await env.redis.zscore(k().keys.indexAll(shard), waited)).toBeNull();
    expect(await env.redis.zscore(k().keys.indexStatus(shard, 'exited'), unwaited)).not.toBeNull();

    // The root ends: the unwaited child can no longer be asked for; both go, and the tree with them.
    await k().tools.process_exit({ pid: r.pid }, { payload: 'done' });
    await sleep(RETENTION_MS + 50);
    await k().retention.sweep();
    // a sweep deletes children first; the root is due once its last child is gone
    await sleep(RETENTION_MS + 50);
    await k().retention.sweep();
    expect((await refusal(k().admin.getProcess(r.pid))).code).toBe('not_found');
    expect(await treeKeys(r.pid)).toEqual([]);
    await k().flushIndex();
    expect(await env.redis.zscore(k().keys.indexAll(shard), r.pid)).toBeNull();
    expect(await env.redis.hget(k().keys.indexGen(shard), unwaited)).toBeNull();
  });

  it('keeps a child its live parent is blocked waiting on', async () => {
    const r = await root(env, { retention_ms: 0 });
    const child = await runningChild(env, r.pid);
    const blocked = k().tools.wait_child_process({ pid: r.pid }, { child_pid: child.pid }, { pollMs: 5_000 });
    await sleep(50);
    await k().retention.sweep();
    expect((await k().admin.getProcess(child.pid)).status).toBe('running');
    await k().worker.complete(child.pid, 1, child.fence, { terminal: { type: 'captured' }, usage: USAGE });
    expect((await blocked).ready).toBe(true);
    // the satisfied wait counts as waited on: with retention 0 it goes at the next sweep
    await k().retention.sweep();
    expect((await refusal(k().admin.getProcess(child.pid))).reason).toBe('deleted');
    expect((await k().admin.getProcess(r.pid)).status).toBe('running');
  });

  it('writes the archive line before the delete', async () => {
    const r = await root(env, { retention_ms: 0 });
    const child = await finished(r.pid);
    await k().tools.wait_child_process({ pid: r.pid }, { child_pid: child, block: false });
    const archived: ArchiveRecord[] = [];
    const existedWhenArchived: boolean[] = [];
    const archive = async (records: ArchiveRecord[]) => {
      for (const record of records) {
        existedWhenArchived.push((await env.redis.exists(k().keys.row(record.pid))) === 1);
        archived.push(record);
      }
    };
    await k().retention.sweep({ archive });
    expect(archived.map((a) => a.pid)).toEqual([child]);
    expect(existedWhenArchived).toEqual([true]);
    expect(archived[0]).toMatchObject({
      root_pid: r.pid,
      lineage: [r.pid],
      process: { pid: child, status: 'exited', outcome: { type: 'completed' } },
    });
    expect((await refusal(k().admin.getProcess(child))).reason).toBe('deleted');

    // a failing archive deletes nothing
    const other = await finished(r.pid);
    await k().tools.wait_child_process({ pid: r.pid }, { child_pid: other, block: false });
    await expect(
      k().retention.sweep({
        archive: async () => {
          throw new Error('disk full');
        },
      }),
    ).rejects.toThrow('disk full');
    expect((await k().admin.getProcess(other)).status).toBe('exited');
  });

  it("deletes a terminal tree at once on an operator's request, and refuses a live one", async () => {
    const r = await root(env);
    const child = await runningChild(env, r.pid, {
      resource_budget: { children: 2 },
      inherit_capabilities: [{ resource: 'process:spawn', rights: ['use'] }],
    });
    const grandchild = await k().tools.spawn_child_process({ pid: child.pid }, { goal: 'g' });
    const live = await refusal(k().retention.deleteTree(r.pid));
    expect(live.code).toBe('failed_precondition');
    expect(live.reason).toBe('not_terminal');
    expect((await k().admin.getProcess(grandchild.pid)).status).toBe('runnable');

    await k().tools.process_exit({ pid: r.pid }, {});
    // the running child is being torn down by its worker: still not deletable
    expect((await refusal(k().retention.deleteTree(r.pid))).reason).toBe('not_terminal');
    await k().worker.complete(child.pid, 1, child.fence, { terminal: { type: 'captured' }, usage: USAGE });
    const deleted = await k().retention.deleteTree(r.pid);
    expect(deleted.deleted).toBe(3);
    expect(await treeKeys(r.pid)).toEqual([]);
    expect((await refusal(k().admin.getProcess(r.pid))).code).toBe('not_found');
  });

  it("releases a root's objects and mailbox at its exit, keeping its result", async () => {
    const r = await root(env);
    const kept = await k().tools.create_object({ pid: r.pid }, { payload: 'x'.repeat(1000) });
    await k().tools.send_process_message({ pid: r.pid }, { to: 'self', body: 'note' });
    const exit = await k().tools.process_exit({ pid: r.pid }, { payload: { answer: 42 } });
    expect((await refusal(k().admin.readObject(kept.oid))).reason).toBe('released');
    expect((await k().admin.readObject(exit.result_oid!)).payload).toEqual({ answer: 42 });
    expect(await env.redis.exists(`${k().keys.tree(r.pid)}mm:${r.pid}`)).toBe(0);
  });

  it('splits the work between coordinators sweeping at once', async () => {
    await k().retention.sweep(); // what earlier tests left due
    const roots = [];
    for (let i = 0; i < 6; i++) {
      const r = await root(env, { retention_ms: 0 });
      for (let j = 0; j < 3; j++) {
        const c = await finished(r.pid);
        await k().tools.wait_child_process({ pid: r.pid }, { child_pid: c, block: false });
      }
      roots.push(r.pid);
    }
    await k().flushIndex();
    const reports = await Promise.all([k().retention.sweep(), k().retention.sweep(), k().retention.sweep()]);
    const total = reports.reduce((n, report) => n + report.deleted, 0);
    // every due child exactly once, whoever took its shard
    expect(total).toBe(18);
    for (const pid of roots) {
      const listed = await k().tools.list_child_processes({ pid }, { include_terminal: true });
      if (listed.children.length > 0) {
        // a shard held by another sweep is skipped, never repeated: a later sweep finishes it
        await k().retention.sweep();
      }
      expect((await k().tools.list_child_processes({ pid }, { include_terminal: true })).children).toEqual(
        [],
      );
    }
  });
});
