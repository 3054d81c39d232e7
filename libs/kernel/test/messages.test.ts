import { describe, expect, it } from 'vitest';
import { Kernel } from '../src/index.js';
import { refusal, root, runningChild, USAGE, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;
const SPAWN = { resource: 'process:spawn', rights: ['use'], delegable: true };

async function until(check: () => Promise<boolean>, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('send_process_message addressing', () => {
  it('reaches self, the parent and a direct child', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const up = await k().tools.send_process_message(
      { pid: child.pid },
      { to: 'parent', body: 'hello', channel: 'status', correlation_id: 'c1', payload: { pct: 50 } },
    );
    expect(up.message_id).toMatch(new RegExp(`^${parent.pid}/m\\d+$`));
    await k().tools.send_process_message(
      { pid: parent.pid },
      { to: child.pid, body: 'down', reply_to: up.message_id },
    );
    await k().tools.send_process_message({ pid: parent.pid }, { to: 'self', body: 'note' });
    await k().tools.send_process_message({ pid: parent.pid }, { to: parent.pid, body: 'note 2' });
    const inbox = await k().tools.read_process_messages({ pid: parent.pid }, {});
    expect(inbox.messages.map((m) => [m.sender, m.body])).toEqual([
      [child.pid, 'hello'],
      [parent.pid, 'note'],
      [parent.pid, 'note 2'],
    ]);
    expect(inbox.messages[0]).toMatchObject({
      message_id: up.message_id,
      recipient: parent.pid,
      kind: 'normal',
      channel: 'status',
      correlation_id: 'c1',
      reply_to: null,
      payload: { pct: 50 },
      labels: [],
      acked: true,
    });
    const childInbox = await k().tools.read_process_messages({ pid: child.pid }, {});
    expect(childInbox.messages[0]).toMatchObject({
      body: 'down',
      reply_to: up.message_id,
      sender: parent.pid,
    });
  });

  it('cannot reach a sibling, a grandchild or another tree', async () => {
    const parent = await root(env);
    const a = await runningChild(env, parent.pid, { inherit_capabilities: [SPAWN] });
    const b = await runningChild(env, parent.pid);
    const grandchild = await k().tools.spawn_child_process({ pid: a.pid }, { goal: 'gc' });
    for (const [from, to] of [
      [a.pid, b.pid],
      [parent.pid, grandchild.pid],
    ] as const) {
      const denied = await refusal(k().tools.send_process_message({ pid: from }, { to, body: 'x' }));
      expect([denied.code, denied.reason]).toEqual(['permission_denied', 'not_direct_child']);
    }
    const other = await root(env);
    const foreign = await refusal(
      k().tools.send_process_message({ pid: parent.pid }, { to: other.pid, body: 'x' }),
    );
    expect(foreign.code).toBe('not_found');
    const orphan = await refusal(
      k().tools.send_process_message({ pid: parent.pid }, { to: 'parent', body: 'x' }),
    );
    expect([orphan.code, orphan.reason]).toEqual(['failed_precondition', 'no_parent']);
  });

  it('cannot reach a terminal process', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    await k().worker.complete(child.pid, 1, child.fence, { terminal: { type: 'no_report' }, usage: USAGE });
    const denied = await refusal(
      k().tools.send_process_message({ pid: parent.pid }, { to: child.pid, body: 'x' }),
    );
    expect([denied.code, denied.reason]).toEqual(['failed_precondition', 'terminal']);
  });
});

describe('read_process_messages', () => {
  async function inboxOf(n: number, extra: (i: number) => Record<string, unknown> = () => ({})) {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const sent = await k().tools.send_process_message(
        { pid: child.pid },
        { to: 'parent', body: `m${i}`, ...extra(i) },
      );
      ids.push(sent.message_id);
    }
    return { parent, child, ids };
  }

  it('acknowledges returned unread messages by default; ack is not deletion', async () => {
    const { parent, ids } = await inboxOf(2);
    const first = await k().tools.read_process_messages({ pid: parent.pid }, {});
    expect(first).toMatchObject({
      acked_message_ids: ids,
      has_more: false,
      omitted_count: 0,
      continuation: null,
    });
    expect(first.messages.every((m) => m.acked && m.acked_at !== null)).toBe(true);
    expect((await k().tools.read_process_messages({ pid: parent.pid }, {})).messages).toEqual([]);
    const again = await k().tools.read_process_messages({ pid: parent.pid }, { include_acked: true });
    expect(again.messages.map((m) => m.message_id)).toEqual(ids);
    expect(again.acked_message_ids).toEqual([]);
  });

  it('ANDs the filters', async () => {
    const { parent, child, ids } = await inboxOf(6, (i) => ({
      kind: i % 2 === 0 ? 'interrupt' : 'normal',
      channel: i < 3 ? 'a' : 'b',
      correlation_id: `c${i % 3}`,
    }));
    const read = (args: Record<string, unknown>) =>
      k().tools.read_process_messages({ pid: parent.pid }, { ack: false, ...args });
    expect((await read({ kind: 'interrupt', channel: 'a' })).messages.map((m) => m.body)).toEqual([
      'm0',
      'm2',
    ]);
    expect((await read({ channel: 'b', correlation_id: 'c0' })).messages.map((m) => m.body)).toEqual(['m3']);
    expect((await read({ kind: 'normal', channel: 'b', correlation_id: 'c1' })).messages).toEqual([]);
    expect(
      (await read({ sender: child.pid, message_ids: [ids[5] ?? '', ids[1] ?? ''] })).messages.map(
        (m) => m.body,
      ),
    ).toEqual(['m1', 'm5']);
    expect((await read({ sender: 'self' })).messages).toEqual([]);
    expect((await read({ message_ids: [ids[0] ?? ''], channel: 'b' })).messages).toEqual([]);
    const reply = await k().tools.send_process_message(
      { pid: child.pid },
      { to: 'parent', reply_to: ids[2] },
    );
    expect((await read({ reply_to: ids[2] })).messages.map((m) => m.message_id)).toEqual([reply.message_id]);
  });

  it('reports has_more, omitted_count and a continuation that advances only with ack and unread', async () => {
    const { parent, ids } = await inboxOf(5);
    const page1 = await k().tools.read_process_messages({ pid: parent.pid }, { limit: 2 });
    expect(page1).toMatchObject({ has_more: true, omitted_count: 3, acked_message_ids: ids.slice(0, 2) });
    expect(page1.continuation).toMatchObject({ reuse_filters: true, advances: true });
    const page2 = await k().tools.read_process_messages({ pid: parent.pid }, { limit: 2 });
    expect(page2.messages.map((m) => m.message_id)).toEqual(ids.slice(2, 4));
    const page3 = await k().tools.read_process_messages({ pid: parent.pid }, { limit: 2 });
    expect(page3).toMatchObject({ has_more: false, omitted_count: 0, continuation: null });
    expect(page3.messages.map((m) => m.message_id)).toEqual(ids.slice(4));
  });

  it('reproduces the replay trap: with ack=false or include_acked=true the same first page repeats forever', async () => {
    const { parent, ids } = await inboxOf(5);
    for (let i = 0; i < 3; i++) {
      const page = await k().tools.read_process_messages({ pid: parent.pid }, { limit: 2, ack: false });
      expect(page.messages.map((m) => m.message_id)).toEqual(ids.slice(0, 2));
      expect(page).toMatchObject({ has_more: true, omitted_count: 3, acked_message_ids: [] });
      expect(page.continuation?.advances).toBe(false);
    }
    for (let i = 0; i < 3; i++) {
      const page = await k().tools.read_process_messages(
        { pid: parent.pid },
        { limit: 2, include_acked: true },
      );
      expect(page.messages.map((m) => m.message_id)).toEqual(ids.slice(0, 2));
      expect(page.continuation?.advances).toBe(false);
    }
    // the first include_acked read acknowledged the first page; the unread ones remain
    const rest = await k().tools.read_process_messages({ pid: parent.pid }, {});
    expect(rest.messages.map((m) => m.message_id)).toEqual(ids.slice(2));
  });

  it('limit=0 returns nothing and counts the matches', async () => {
    const { parent } = await inboxOf(3);
    const page = await k().tools.read_process_messages({ pid: parent.pid }, { limit: 0 });
    expect(page).toMatchObject({ messages: [], has_more: true, omitted_count: 3 });
  });
});

describe('receive_process_messages', () => {
  it('with block=false answers ready=false when nothing matches', async () => {
    const parent = await root(env);
    const result = await k().tools.receive_process_messages({ pid: parent.pid }, { block: false });
    expect(result).toMatchObject({ ready: false, messages: [] });
  });

  it('blocks until a matching unread message arrives; nonmatches stay queued', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const receiving = k().tools.receive_process_messages({ pid: parent.pid }, { channel: 'answer' });
    await until(async () => (await k().admin.getProcess(parent.pid)).status === 'waiting_event');
    expect((await k().admin.getProcess(parent.pid)).wait_state).toMatchObject({
      type: 'message',
      filter: { channel: 'answer', include_acked: false },
    });
    const noise = await k().tools.send_process_message(
      { pid: child.pid },
      { to: 'parent', channel: 'progress' },
    );
    const answer = await k().tools.send_process_message(
      { pid: child.pid },
      { to: 'parent', channel: 'answer', body: '42' },
    );
    const result = await receiving;
    expect(result).toMatchObject({ ready: true, acked_message_ids: [answer.message_id] });
    expect(result.messages.map((m) => m.body)).toEqual(['42']);
    expect((await k().admin.getProcess(parent.pid)).status).toBe('running');
    const left = await k().tools.read_process_messages({ pid: parent.pid }, {});
    expect(left.messages.map((m) => m.message_id)).toEqual([noise.message_id]);
  });

  it('re-checks on every arrival without new transitions while nothing matches', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const receiving = k().tools.receive_process_messages(
      { pid: parent.pid },
      { channel: 'go' },
      { pollMs: 5000 },
    );
    await until(async () => (await k().admin.getProcess(parent.pid)).status === 'waiting_event');
    const registered = (await k().admin.getProcess(parent.pid)).state_generation;
    for (let i = 0; i < 3; i++)
      await k().tools.send_process_message({ pid: child.pid }, { to: 'parent', channel: 'noise' });
    await new Promise((r) => setTimeout(r, 100));
    expect((await k().admin.getProcess(parent.pid)).state_generation).toBe(registered);
    await k().admin.signal(parent.pid, { signal: 'pause' });
    await k().admin.signal(parent.pid, { signal: 'resume' });
    expect((await k().admin.getProcess(parent.pid)).status).toBe('waiting_event');
    const ready = await k().admin.getProcess(parent.pid);
    expect(ready.wait_state).toMatchObject({ type: 'message', filter: { channel: 'go' } });
    await new Promise((r) => setTimeout(r, 50));
    const go = await k().tools.send_process_message({ pid: child.pid }, { to: 'parent', channel: 'go' });
    expect((await receiving).messages.map((m) => m.message_id)).toEqual([go.message_id]);
  });

  it('lets an old acked match satisfy the wait only with include_acked=true', async () => {
    const parent = await root(env);
    const sent = await k().tools.send_process_message({ pid: parent.pid }, { to: 'self', channel: 'x' });
    await k().tools.read_process_messages({ pid: parent.pid }, {});
    const old = await k().tools.receive_process_messages(
      { pid: parent.pid },
      { channel: 'x', include_acked: true },
    );
    expect(old.messages.map((m) => m.message_id)).toEqual([sent.message_id]);
    const fresh = await k().tools.receive_process_messages(
      { pid: parent.pid },
      { channel: 'x' },
      { pollMs: 100 },
    );
    expect(fresh.ready).toBe(false);
  });

  it('refuses a blocking receive on empty message_ids or limit=0', async () => {
    const parent = await root(env);
    for (const args of [{ message_ids: [] }, { limit: 0 }]) {
      const bad = await refusal(k().tools.receive_process_messages({ pid: parent.pid }, args));
      expect([bad.code, bad.reason]).toEqual(['invalid_argument', 'blocking_receive']);
      const ok = await k().tools.receive_process_messages({ pid: parent.pid }, { ...args, block: false });
      expect(ok.ready).toBe(false);
    }
    expect((await k().admin.getProcess(parent.pid)).status).toBe('running');
  });
});

describe('notices', () => {
  it('exposes interrupts before the next non-message call and normal messages after a call, ids only, once', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const interrupt = await k().tools.send_process_message(
      { pid: parent.pid },
      { to: child.pid, kind: 'interrupt', body: 'stop and re-plan' },
    );
    const normal = await k().tools.send_process_message({ pid: parent.pid }, { to: child.pid, body: 'fyi' });
    expect(await k().pendingNotices(child.pid)).toEqual({
      interrupt: [interrupt.message_id],
      normal: [normal.message_id],
    });
    const before = await k().takeNotices(child.pid, 'before');
    expect(before).toMatchObject({ kind: 'interrupt', message_ids: [interrupt.message_id] });
    expect(await k().takeNotices(child.pid, 'before')).toBeUndefined();
    const after = await k().takeNotices(child.pid, 'after');
    expect(after).toMatchObject({ kind: 'normal', message_ids: [normal.message_id] });
    // notices neither pause nor ack anything
    expect((await k().admin.getProcess(child.pid)).status).toBe('running');
    const unread = await k().tools.read_process_messages({ pid: child.pid }, {});
    expect(unread.messages).toHaveLength(2);
  });

  it('drops the notice of a message acknowledged before it was delivered', async () => {
    const parent = await root(env);
    await k().tools.send_process_message({ pid: parent.pid }, { to: 'self', kind: 'interrupt' });
    await k().tools.read_process_messages({ pid: parent.pid }, {});
    expect(await k().pendingNotices(parent.pid)).toEqual({ interrupt: [], normal: [] });
  });
});

describe('bounded mailboxes', () => {
  it('refuses a send over the bound with resource_exhausted and loses nothing', async () => {
    const small = new Kernel({ redis: env.redis, keyPrefix: env.prefix, limits: { mailboxMax: 5 } });
    const parent = await root(env);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        (await small.tools.send_process_message({ pid: parent.pid }, { to: 'self', body: `${i}` }))
          .message_id,
      );
    }
    const full = await refusal(
      small.tools.send_process_message({ pid: parent.pid }, { to: 'self', body: 'over' }),
    );
    expect([full.code, full.reason]).toEqual(['resource_exhausted', 'mailbox_full']);
    const read = await small.tools.read_process_messages({ pid: parent.pid }, { limit: 2 });
    expect(read.messages.map((m) => m.message_id)).toEqual(ids.slice(0, 2));
    await small.tools.send_process_message({ pid: parent.pid }, { to: 'self', body: 'fits again' });
    const rest = await small.tools.read_process_messages({ pid: parent.pid }, {});
    expect(rest.messages.map((m) => m.body)).toEqual(['2', '3', '4', 'fits again']);
    await small.close();
  });

  it('defaults to 10000 unacknowledged messages', () => {
    expect(k().limits.mailboxMax).toBe(10_000);
  });
});

describe('data flow through messages', () => {
  it('labels a message with the sender’s labels and refuses delivery outside the recipient clearance', async () => {
    const parent = await root(env, { clearance: ['public'] });
    const child = await runningChild(env, parent.pid, { clearance: ['public', 'secret'] });
    const beyond = await refusal(
      k().tools.send_process_message({ pid: parent.pid }, { to: child.pid, labels: ['pii'], body: 'x' }),
    );
    expect([beyond.code, beyond.reason]).toEqual(['permission_denied', 'data_flow']);
    await k().tools.send_process_message(
      { pid: child.pid },
      { to: 'parent', labels: ['public'], body: 'fine' },
    );
    const secret = await k().tools.create_object({ pid: child.pid }, { payload: 's', labels: ['secret'] });
    await k().tools.read_object({ pid: child.pid }, { oid: secret.oid });
    const denied = await refusal(
      k().tools.send_process_message({ pid: child.pid }, { to: 'parent', body: 'leak' }),
    );
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'data_flow']);
    const inbox = await k().tools.read_process_messages({ pid: parent.pid }, {});
    expect(inbox.messages.map((m) => [m.body, m.labels])).toEqual([['fine', ['public']]]);
    expect((await k().admin.getProcess(parent.pid)).labels).toEqual(['public']);
  });

  it('rejects malformed arguments without sending', async () => {
    const parent = await root(env);
    for (const args of [
      {},
      { to: 'nobody' },
      { to: 'self', reply_to: 'm1' },
      { to: 'self', kind: 'urgent' },
    ]) {
      const bad = await refusal(k().tools.send_process_message({ pid: parent.pid }, args as never));
      expect(bad.code).toBe('invalid_argument');
    }
    expect((await k().tools.read_process_messages({ pid: parent.pid }, {})).messages).toEqual([]);
  });
});
