import { describe, expect, it } from 'vitest';
import { mintToken } from '../src/index.js';
import { refusal, root, runningChild, USAGE, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;

async function claim(pid: string) {
  return (
    await k().worker.claim(pid, 1, { workerId: 'w', tokenHash: mintToken(pid).tokenHash, leaseMs: 60_000 })
  ).fence;
}

describe('objects', () => {
  it('creates, reads and writes with versions, rights and roots', async () => {
    const p = await root(env);
    const made = await k().tools.create_object({ pid: p.pid }, { payload: { v: 1 } });
    expect(made).toMatchObject({ version: 1, labels: [] });
    const hidden = await k().tools.create_object({ pid: p.pid }, { payload: 'x', root: false });
    const roots = (await k().admin.getProcess(p.pid)).roots;
    expect(roots).toContain(made.oid);
    expect(roots).not.toContain(hidden.oid);
    expect(await k().tools.read_object({ pid: p.pid }, { oid: made.oid })).toEqual({
      oid: made.oid,
      payload: { v: 1 },
      owner: p.pid,
      rights: ['read', 'write'],
      labels: [],
      version: 1,
      kind: 'PROCESS',
    });
    expect(await k().tools.write_object({ pid: p.pid }, { oid: made.oid, payload: { v: 2 } })).toEqual({
      oid: made.oid,
      version: 2,
    });
    const conflict = await refusal(
      k().tools.write_object({ pid: p.pid }, { oid: made.oid, payload: 3, if_version: 1 }),
    );
    expect([conflict.code, conflict.reason]).toEqual(['failed_precondition', 'version_conflict']);
    expect(
      (await k().tools.write_object({ pid: p.pid }, { oid: made.oid, payload: 3, if_version: 2 })).version,
    ).toBe(3);
  });

  it('refuses without a handle, without rights, and for payloads over the limit', async () => {
    const p = await root(env);
    const child = await runningChild(env, p.pid);
    const mine = await k().tools.create_object({ pid: p.pid }, { payload: 1 });
    const denied = await refusal(k().tools.read_object({ pid: child.pid }, { oid: mine.oid }));
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'no_handle']);
    const goal = (await k().admin.getProcess(child.pid)).roots[0] ?? '';
    const readOnly = await refusal(
      k().tools.write_object({ pid: child.pid }, { oid: goal, payload: 'new goal' }),
    );
    expect(readOnly.reason).toBe('rights');
    const big = await refusal(
      k().tools.create_object({ pid: p.pid }, { payload: 'x'.repeat(k().limits.maxPayloadBytes) }),
    );
    expect(big.code).toBe('payload_too_large');
  });
});

describe('data flow', () => {
  it('labels what a process creates after reading labelled data', async () => {
    const p = await root(env, { clearance: ['secret', 'pii'] });
    const plain = await k().tools.create_object({ pid: p.pid }, { payload: 'plain' });
    const secret = await k().tools.create_object({ pid: p.pid }, { payload: 's', labels: ['secret'] });
    expect(plain.labels).toEqual([]);
    expect(secret.labels).toEqual(['secret']);
    await k().tools.read_object({ pid: p.pid }, { oid: secret.oid });
    const derived = await k().tools.create_object({ pid: p.pid }, { payload: 'derived', labels: ['pii'] });
    expect(derived.labels).toEqual(['pii', 'secret']);
    await k().tools.write_object({ pid: p.pid }, { oid: plain.oid, payload: 'now tainted' });
    // the writer's labels (what it has read: secret, not the pii it only attached) flow in
    expect((await k().tools.read_object({ pid: p.pid }, { oid: plain.oid })).labels).toEqual(['secret']);
    const beyond = await refusal(
      k().tools.create_object({ pid: p.pid }, { payload: 'x', labels: ['medical'] }),
    );
    expect([beyond.code, beyond.reason]).toEqual(['permission_denied', 'data_flow']);
  });

  it('refuses read_object when a shared object gained labels beyond the reader’s clearance', async () => {
    const p = await root(env);
    const shared = await k().tools.create_object({ pid: p.pid }, { payload: 'shared' });
    const writer = await k().tools.fork_child_process(
      { pid: p.pid },
      { goal: 'w', root_oids: [shared.oid], mode: 'copy', clearance: ['secret'] },
    );
    const reader = await k().tools.fork_child_process(
      { pid: p.pid },
      { goal: 'r', root_oids: [shared.oid], clearance: ['public'] },
    );
    await claim(writer.pid);
    await claim(reader.pid);
    expect((await k().tools.read_object({ pid: reader.pid }, { oid: shared.oid })).payload).toBe('shared');
    const secret = await k().tools.create_object({ pid: writer.pid }, { payload: 's', labels: ['secret'] });
    await k().tools.read_object({ pid: writer.pid }, { oid: secret.oid });
    await k().tools.write_object({ pid: writer.pid }, { oid: shared.oid, payload: 'now secret' });
    const denied = await refusal(k().tools.read_object({ pid: reader.pid }, { oid: shared.oid }));
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'data_flow']);
  });

  it('refuses a write that would put labels outside the owner’s clearance', async () => {
    const p = await root(env, { clearance: ['public'] });
    const own = await k().tools.create_object({ pid: p.pid }, { payload: 'mine' });
    const child = await k().tools.fork_child_process(
      { pid: p.pid },
      { goal: 'c', root_oids: [own.oid], mode: 'copy', clearance: ['public', 'secret'] },
    );
    await claim(child.pid);
    const secret = await k().tools.create_object({ pid: child.pid }, { payload: 's', labels: ['secret'] });
    await k().tools.read_object({ pid: child.pid }, { oid: secret.oid });
    const denied = await refusal(
      k().tools.write_object({ pid: child.pid }, { oid: own.oid, payload: 'leak' }),
    );
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'data_flow']);
    expect((await k().tools.read_object({ pid: p.pid }, { oid: own.oid })).payload).toBe('mine');
  });
});

describe('merge_child_memory', () => {
  async function finishedChild(parent: string, extra: Record<string, unknown> = {}) {
    const child = await runningChild(env, parent, extra);
    const root1 = await k().tools.create_object({ pid: child.pid }, { payload: 'root memory' });
    const scratch = await k().tools.create_object({ pid: child.pid }, { payload: 'scratch', root: false });
    const exit = await k().tools.process_exit({ pid: child.pid }, { payload: { final: true } });
    return { child, root1: root1.oid, scratch: scratch.oid, result: exit.result_oid ?? '' };
  }

  it('adopts the child’s roots without renaming, releases the rest and revokes stale handles', async () => {
    const p = await root(env);
    const { child, root1, scratch, result } = await finishedChild(p.pid);
    const waited = await k().tools.wait_child_process({ pid: p.pid }, { child_pid: child.pid });
    expect(waited.result_oid).toBe(result);
    const genBefore = (await k().admin.getProcess(child.pid)).state_generation;
    const merged = await k().tools.merge_child_memory({ pid: p.pid }, { child_pid: child.pid });
    const goal = (await k().admin.getProcess(child.pid)).roots[0];
    expect(merged).toEqual({ merged_oids: [root1], skipped_oids: [{ oid: goal, reason: 'goal' }] });
    expect(await k().tools.read_object({ pid: p.pid }, { oid: root1 })).toMatchObject({
      oid: root1,
      owner: p.pid,
      rights: ['read', 'write'],
      payload: 'root memory',
    });
    // the waited result was not a root: merge released it and revoked the parent's handle
    const gone = await refusal(k().tools.read_object({ pid: p.pid }, { oid: result }));
    expect(gone.reason).toBe('no_handle');
    expect(await env.redis.exists(`${k().keys.treeOf(p.pid)}o:${scratch.split('/o')[1]}`)).toBe(0);
    const view = await k().admin.getProcess(child.pid);
    expect(view.merged).toBe(true);
    expect(view.state_generation).toBe(genBefore + 1);
  });

  it('with include_child_created also adopts the other PROCESS objects, never the generated result', async () => {
    const p = await root(env);
    const { child, root1, scratch, result } = await finishedChild(p.pid);
    const merged = await k().tools.merge_child_memory(
      { pid: p.pid },
      { child_pid: child.pid, include_child_created: true },
    );
    expect(merged.merged_oids).toEqual([root1, scratch]);
    expect(merged.merged_oids).not.toContain(result);
  });

  it('merges once, only a terminal direct child', async () => {
    const p = await root(env);
    const live = await runningChild(env, p.pid);
    const notYet = await refusal(k().tools.merge_child_memory({ pid: p.pid }, { child_pid: live.pid }));
    expect([notYet.code, notYet.reason]).toEqual(['failed_precondition', 'not_terminal']);
    const { child } = await finishedChild(p.pid);
    await k().tools.merge_child_memory({ pid: p.pid }, { child_pid: child.pid });
    const twice = await refusal(k().tools.merge_child_memory({ pid: p.pid }, { child_pid: child.pid }));
    expect([twice.code, twice.reason]).toEqual(['failed_precondition', 'already_merged']);
    const other = await root(env);
    const stranger = await refusal(k().tools.merge_child_memory({ pid: live.pid }, { child_pid: p.pid }));
    expect(stranger.reason).toBe('not_direct_child');
    expect(
      (await refusal(k().tools.merge_child_memory({ pid: other.pid }, { child_pid: child.pid }))).code,
    ).toBe('not_found');
  });

  it('skips inherited roots it does not own', async () => {
    const p = await root(env);
    const shared = await k().tools.create_object({ pid: p.pid }, { payload: 'parent owned' });
    const forked = await k().tools.fork_child_process({ pid: p.pid }, { goal: 'f', root_oids: [shared.oid] });
    await claim(forked.pid);
    await k().tools.process_exit({ pid: forked.pid }, {});
    const merged = await k().tools.merge_child_memory({ pid: p.pid }, { child_pid: forked.pid });
    expect(merged.skipped_oids).toContainEqual({ oid: shared.oid, reason: 'not_child_owned' });
    expect((await k().tools.read_object({ pid: p.pid }, { oid: shared.oid })).payload).toBe('parent owned');
  });

  it('is refused whole when a candidate would leave the parent’s clearance (data flow)', async () => {
    const p = await root(env, { clearance: ['public'] });
    const child = await runningChild(env, p.pid, { clearance: ['public', 'secret'] });
    const secret = await k().tools.create_object(
      { pid: child.pid },
      { payload: 'classified', labels: ['secret'] },
    );
    await k().worker.complete(child.pid, 1, child.fence, { terminal: { type: 'no_report' }, usage: USAGE });
    const denied = await refusal(k().tools.merge_child_memory({ pid: p.pid }, { child_pid: child.pid }));
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'data_flow']);
    expect(denied.details).toMatchObject({ oids: [secret.oid] });
    const view = await k().admin.getProcess(child.pid);
    expect(view.merged).toBe(false);
    expect(await env.redis.exists(`${k().keys.treeOf(p.pid)}o:${secret.oid.split('/o')[1]}`)).toBe(1);
  });
});
