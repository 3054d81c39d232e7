import { describe, expect, it } from 'vitest';
import { refusal, root, runningChild, USAGE, useKernel } from './helpers.js';

const env = useKernel({ limits: { mailboxMaxBytes: 1_000, mailboxMax: 30 } });
const k = () => env.kernel;
/** A payload whose stored JSON is exactly `n` bytes. */
const bytes = (n: number) => 'x'.repeat(n - 2);

describe('mailbox byte bound', () => {
  it('refuses a send past the bound with mailbox_full (bound: bytes) and writes nothing', async () => {
    const r = await root(env);
    const child = await runningChild(env, r.pid);
    const body = 'y'.repeat(600);
    await k().tools.send_process_message({ pid: r.pid }, { to: child.pid, body });
    const full = await refusal(k().tools.send_process_message({ pid: r.pid }, { to: child.pid, body }));
    expect(full.code).toBe('resource_exhausted');
    expect(full.reason).toBe('mailbox_full');
    expect(full.details).toMatchObject({ bound: 'bytes', limit: 1_000 });
    expect(full.message).toContain('bytes');
    const inbox = await k().tools.read_process_messages({ pid: child.pid }, { ack: false });
    expect(inbox.messages).toHaveLength(1);

    // once read (acknowledged), the old message makes room: acknowledged ones are trimmed first
    await k().tools.read_process_messages({ pid: child.pid }, {});
    await k().tools.send_process_message({ pid: r.pid }, { to: child.pid, body });
    const after = await k().tools.read_process_messages(
      { pid: child.pid },
      { include_acked: true, ack: false },
    );
    expect(after.messages).toHaveLength(1);
    expect(after.messages[0]?.acked).toBe(false);
  });

  it('still bounds the count (bound: count)', async () => {
    const r = await root(env);
    for (let i = 0; i < 30; i++)
      await k().tools.send_process_message({ pid: r.pid }, { to: 'self', body: 'a' });
    const full = await refusal(k().tools.send_process_message({ pid: r.pid }, { to: 'self', body: 'a' }));
    expect(full.details).toMatchObject({ bound: 'count', limit: 30 });
  });
});

describe('object_bytes budget', () => {
  it("refuses an object past the tree's object_bytes with resource_exhausted and writes nothing", async () => {
    const r = await root(env, { resource_budget: { object_bytes: 2_000 } });
    await k().tools.create_object({ pid: r.pid }, { payload: bytes(1_500) });
    const seqBefore = await env.redis.hget(k().keys.seq(r.pid), 'o');
    const over = await refusal(k().tools.create_object({ pid: r.pid }, { payload: bytes(600) }));
    expect(over.code).toBe('resource_exhausted');
    expect(over.reason).toBe('budget');
    expect(over.details).toMatchObject({ dimension: 'object_bytes', requested: 600, remaining: 500 });
    expect(await env.redis.hget(k().keys.seq(r.pid), 'o')).toBe(seqBefore);
    const view = await k().admin.getProcess(r.pid);
    expect(view.resource_budget.object_bytes).toMatchObject({ limit: 2_000, used: 1_500 });
    // the exit payload counts too: refused, and the process is still running
    const exit = await refusal(k().tools.process_exit({ pid: r.pid }, { payload: bytes(600) }));
    expect(exit.reason).toBe('budget');
    expect((await k().admin.getProcess(r.pid)).status).toBe('running');
  });

  it('gives a child less, reserved from its parent, and returns bytes when objects are released', async () => {
    const r = await root(env, { resource_budget: { object_bytes: 10_000, children: 5 } });
    const child = await runningChild(env, r.pid, { resource_budget: { object_bytes: 1_000 } });
    expect((await k().admin.getProcess(r.pid)).resource_budget.object_bytes).toMatchObject({
      reserved: 1_000,
      remaining: 9_000,
    });
    // not roots: a merge leaves them behind (released)
    await k().tools.create_object({ pid: child.pid }, { payload: bytes(800), root: false });
    const over = await refusal(
      k().tools.create_object({ pid: child.pid }, { payload: bytes(300), root: false }),
    );
    expect(over.details).toMatchObject({ dimension: 'object_bytes', remaining: 200 });
    // a write that grows an object is charged to its owner, and refused the same way
    const small = await k().tools.create_object({ pid: child.pid }, { payload: bytes(100), root: false });
    const grow = await refusal(
      k().tools.write_object({ pid: child.pid }, { oid: small.oid, payload: bytes(300) }),
    );
    expect(grow.details).toMatchObject({ dimension: 'object_bytes' });
    await k().tools.write_object({ pid: child.pid }, { oid: small.oid, payload: bytes(50) });
    expect((await k().admin.getProcess(child.pid)).resource_budget.object_bytes.used).toBe(850);

    await k().worker.complete(child.pid, 1, child.fence, {
      terminal: { type: 'captured' },
      report: 'r',
      usage: USAGE,
    });
    const parentHeld = (await k().admin.getProcess(r.pid)).resource_budget.object_bytes;
    expect(parentHeld.reserved).toBe(0);
    expect(parentHeld.used).toBe(850 + 3);
    // merging nothing releases the child's objects: their bytes return up the chain
    await k().tools.merge_child_memory({ pid: r.pid }, { child_pid: child.pid });
    expect((await k().admin.getProcess(r.pid)).resource_budget.object_bytes.used).toBe(0);
  });

  it("releases a root's objects at its exit and gives their bytes back", async () => {
    const r = await root(env, { resource_budget: { object_bytes: 5_000 } });
    const created = await k().tools.create_object({ pid: r.pid }, { payload: bytes(2_000) });
    await k().tools.process_exit({ pid: r.pid }, { payload: bytes(100) });
    expect((await refusal(k().admin.readObject(created.oid))).reason).toBe('released');
    expect((await k().admin.getProcess(r.pid)).resource_budget.object_bytes.used).toBe(100);
  });
});
