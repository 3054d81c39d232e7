import { describe, expect, it } from 'vitest';
import { mintToken } from '../src/index.js';
import { refusal, root, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;

async function parentWithRoots() {
  const parent = await root(env);
  const a = await k().tools.create_object({ pid: parent.pid }, { payload: { a: 1 } });
  const b = await k().tools.create_object({ pid: parent.pid }, { payload: { b: 2 } });
  const hidden = await k().tools.create_object({ pid: parent.pid }, { payload: 'not a root', root: false });
  const goal = (await k().admin.getProcess(parent.pid)).roots[0] ?? '';
  return { parent, a: a.oid, b: b.oid, hidden: hidden.oid, goal };
}

async function claim(pid: string) {
  const claimed = await k().worker.claim(pid, 1, {
    workerId: 'w',
    tokenHash: mintToken(pid).tokenHash,
    leaseMs: 60_000,
  });
  return claimed.fence;
}

describe('fork_child_process root selection', () => {
  it('selects all parent roots when root_oids is omitted, the goal always a separate first root', async () => {
    const { parent, a, b, goal } = await parentWithRoots();
    const child = await k().tools.fork_child_process({ pid: parent.pid }, { goal: 'explore' });
    expect(child.roots.map((r) => r.oid).slice(1)).toEqual([goal, a, b]);
    const childGoal = child.roots[0];
    expect(childGoal?.oid).not.toBe(goal);
    expect(childGoal?.rights).toEqual(['read']);
    expect((await k().admin.getProcess(child.pid)).mode).toBe('worker');
  });

  it('selects nothing but the goal with include_parent_roots=false', async () => {
    const { parent } = await parentWithRoots();
    const child = await k().tools.fork_child_process(
      { pid: parent.pid },
      { goal: 'g', include_parent_roots: false },
    );
    expect(child.roots).toHaveLength(1);
  });

  it('treats root_oids, even [], as an exact replacement', async () => {
    const { parent, b, hidden } = await parentWithRoots();
    const none = await k().tools.fork_child_process({ pid: parent.pid }, { goal: 'g', root_oids: [] });
    expect(none.roots).toHaveLength(1);
    const exact = await k().tools.fork_child_process(
      { pid: parent.pid },
      { goal: 'g', root_oids: [b, hidden], include_parent_roots: true },
    );
    expect(exact.roots.slice(1).map((r) => r.oid)).toEqual([b, hidden]);
  });

  it('requires the parent to hold every delegated object right', async () => {
    const { parent } = await parentWithRoots();
    const other = await parentWithRoots();
    const sibling = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 's' });
    const siblingGoal = (await k().admin.getProcess(sibling.pid)).roots[0] ?? '';
    const denied = await refusal(
      k().tools.fork_child_process({ pid: parent.pid }, { goal: 'g', root_oids: [siblingGoal] }),
    );
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'no_handle']);
    const foreign = await refusal(
      k().tools.fork_child_process({ pid: parent.pid }, { goal: 'g', root_oids: [other.a] }),
    );
    expect(foreign.code).toBe('not_found');
  });

  it('refuses roots whose labels exceed the child clearance (data flow)', async () => {
    const parent = await root(env, { clearance: ['internal', 'secret'] });
    const secret = await k().tools.create_object({ pid: parent.pid }, { payload: 's', labels: ['secret'] });
    const denied = await refusal(
      k().tools.fork_child_process(
        { pid: parent.pid },
        { goal: 'g', root_oids: [secret.oid], clearance: ['internal'] },
      ),
    );
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'data_flow']);
  });
});

describe('fork modes', () => {
  it('worker and restricted inherit roots read-only', async () => {
    const { parent, a } = await parentWithRoots();
    for (const mode of ['worker', 'restricted'] as const) {
      const child = await k().tools.fork_child_process(
        { pid: parent.pid },
        { goal: 'g', root_oids: [a], mode },
      );
      expect(child.roots[1]).toEqual({ oid: a, rights: ['read'] });
      await claim(child.pid);
      expect((await k().tools.read_object({ pid: child.pid }, { oid: a })).payload).toEqual({ a: 1 });
      const denied = await refusal(k().tools.write_object({ pid: child.pid }, { oid: a, payload: 'x' }));
      expect([denied.code, denied.reason]).toEqual(['permission_denied', 'rights']);
    }
  });

  it('restricted inherits no capabilities and may not launch descendants', async () => {
    const { parent } = await parentWithRoots();
    const denied = await refusal(
      k().tools.fork_child_process(
        { pid: parent.pid },
        { goal: 'g', mode: 'restricted', inherit_capabilities: [{ resource: 'image:*', rights: ['read'] }] },
      ),
    );
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'restricted']);
    const child = await k().tools.fork_child_process({ pid: parent.pid }, { goal: 'g', mode: 'restricted' });
    expect(child.resource_budget.children.limit).toBe(0);
  });

  it('copy delegates write on the same OID: a child update alters what the parent sees', async () => {
    const { parent, a } = await parentWithRoots();
    const child = await k().tools.fork_child_process(
      { pid: parent.pid },
      { goal: 'g', root_oids: [a], mode: 'copy' },
    );
    expect(child.roots[1]).toEqual({ oid: a, rights: ['read', 'write'] });
    await claim(child.pid);
    await k().tools.write_object({ pid: child.pid }, { oid: a, payload: { a: 'changed by child' } });
    const seen = await k().tools.read_object({ pid: parent.pid }, { oid: a });
    expect(seen).toMatchObject({ payload: { a: 'changed by child' }, version: 2, owner: parent.pid });
  });

  it('speculative makes inherited roots read-only and ephemeral, yet child-created objects can be merged', async () => {
    const { parent, a } = await parentWithRoots();
    const child = await k().tools.fork_child_process({ pid: parent.pid }, { goal: 'g', mode: 'speculative' });
    await claim(child.pid);
    const denied = await refusal(k().tools.write_object({ pid: child.pid }, { oid: a, payload: 'x' }));
    expect(denied.reason).toBe('rights');
    const made = await k().tools.create_object({ pid: child.pid }, { payload: 'kept' });
    await k().tools.process_exit({ pid: child.pid }, {});
    const merged = await k().tools.merge_child_memory({ pid: parent.pid }, { child_pid: child.pid });
    expect(merged.merged_oids).toEqual([made.oid]);
    expect(merged.skipped_oids).toEqual(
      expect.arrayContaining([
        { oid: a, reason: 'ephemeral' },
        { oid: child.roots[0]?.oid, reason: 'goal' },
      ]),
    );
    expect((await k().tools.read_object({ pid: parent.pid }, { oid: made.oid })).owner).toBe(parent.pid);
    // the speculative child did not roll anything back: the parent's own object is untouched
    expect((await k().tools.read_object({ pid: parent.pid }, { oid: a })).payload).toEqual({ a: 1 });
  });
});

describe('fork skill snapshot', () => {
  it('same-image forks keep the snapshot; cross-image forks drop skills the new image lacks', async () => {
    const { parent } = await parentWithRoots();
    const same = await k().tools.fork_child_process({ pid: parent.pid }, { goal: 'g' });
    expect((await k().admin.getProcess(same.pid)).skill_snapshot).toEqual(['search', 'edit']);
    const cross = await k().tools.fork_child_process({ pid: parent.pid }, { goal: 'g', image: 'other' });
    expect((await k().admin.getProcess(cross.pid)).skill_snapshot).toEqual(['search']);
  });
});
