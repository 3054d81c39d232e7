import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { assemble } from '../src/scripts.js';
import { recordCommands, root, runningChild, USAGE, useKernel } from './helpers.js';

const env = useKernel({ own: true, aof: true });
const k = () => env.kernel;

async function until(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // Redis may still be coming back
    }
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function snapshot(pids: string[]) {
  return Promise.all(pids.map((pid) => k().admin.getProcess(pid)));
}

describe('durability with AOF', () => {
  it('keeps rows, edges, waits, outcomes, messages and object payloads across a restart', async () => {
    const parent = await root(env, { resource_budget: { tokens: 10_000 } });
    const running = await runningChild(env, parent.pid);
    const queued = await env.kernel.tools.spawn_child_process({ pid: parent.pid }, { goal: 'queued' });
    const done = await runningChild(env, parent.pid);
    const memory = await k().tools.create_object({ pid: done.pid }, { payload: { kept: 'child memory' } });
    const completed = await k().worker.complete(done.pid, 1, done.fence, {
      terminal: { type: 'captured' },
      report: { answer: 42 },
      usage: USAGE,
    });
    const unread = await k().tools.send_process_message(
      { pid: running.pid },
      { to: 'parent', kind: 'interrupt', channel: 'c', body: 'unread' },
    );
    await k().tools.send_process_message({ pid: parent.pid }, { to: 'self', body: 'acked' });
    await k().tools.read_process_messages({ pid: parent.pid }, { sender: 'self' });
    await k().tools.wait_child_process({ pid: parent.pid }, { child_pid: running.pid }, { pollMs: 50 });
    await k().flushIndex();
    const pids = [parent.pid, running.pid, queued.pid, done.pid];
    const before = await snapshot(pids);
    expect(before[0]?.status).toBe('waiting_event');

    await env.server.restart?.();
    await until(async () => (await env.redis.ping()) === 'PONG');

    expect(await snapshot(pids)).toEqual(before);
    expect(
      (await k().tools.list_child_processes({ pid: parent.pid }, {})).children.map((c) => c.pid),
    ).toEqual([running.pid, queued.pid, done.pid]);
    expect(await k().authenticate(running.token)).toMatchObject({ pid: running.pid });
    expect(await k().pendingNotices(parent.pid)).toEqual({ interrupt: [unread.message_id], normal: [] });
    const mail = await k().tools.read_process_messages(
      { pid: parent.pid },
      { include_acked: true, ack: false },
    );
    expect(mail.messages.map((m) => [m.body, m.acked])).toEqual([
      ['unread', false],
      ['acked', true],
    ]);
    const result = await k().tools.wait_child_process(
      { pid: parent.pid },
      { child_pid: done.pid, block: false },
    );
    expect(result).toMatchObject({
      ready: true,
      result_oid: completed.result_oid,
      outcome: { type: 'completed' },
    });
    expect(
      (await k().tools.read_object({ pid: parent.pid }, { oid: completed.result_oid ?? '' })).payload,
    ).toEqual({
      answer: 42,
    });
    const merged = await k().tools.merge_child_memory({ pid: parent.pid }, { child_pid: done.pid });
    expect(merged.merged_oids).toEqual([memory.oid]);
    expect((await k().tools.read_object({ pid: parent.pid }, { oid: memory.oid })).payload).toEqual({
      kept: 'child memory',
    });
    expect((await k().admin.listProcesses({ status: 'runnable' })).processes.map((p) => p.pid)).toContain(
      queued.pid,
    );
  });

  it('loses nothing acknowledged when Redis crashes, and a blocked wait survives it', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const other = await root(env);
    const sent = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        k().tools.send_process_message({ pid: other.pid }, { to: 'self', body: `${i}` }),
      ),
    );
    const waiting = k().tools.wait_child_process(
      { pid: parent.pid },
      { child_pid: child.pid },
      { pollMs: 20_000 },
    );
    await until(async () => (await k().admin.getProcess(parent.pid)).status === 'waiting_event');

    await env.server.crash?.();
    await until(async () => (await env.redis.ping()) === 'PONG');

    const inbox = await k().tools.read_process_messages({ pid: other.pid }, { limit: 100, ack: false });
    expect(inbox.messages.map((m) => m.message_id)).toEqual(sent.map((s) => s.message_id));
    expect((await k().admin.getProcess(parent.pid)).wait_state).toMatchObject({
      type: 'child',
      child_pid: child.pid,
    });
    // the wake hub reconnects and re-subscribes; the terminal transition still wakes the waiter
    await until(async () => {
      await k().worker.renew(child.pid, 1, child.fence, 60_000);
      return true;
    });
    await k().worker.complete(child.pid, 1, child.fence, {
      terminal: { type: 'captured' },
      report: 'ok',
      usage: USAGE,
    });
    const result = await waiting;
    expect(result).toMatchObject({ ready: true, status: 'exited' });
    expect((await k().admin.getProcess(parent.pid)).status).toBe('running');
  }, 30_000);
});

describe('scripts on a server that forgot them', () => {
  it('answers the call that found none by EVAL and loads every script, so the next calls are one EVALSHA', async () => {
    const parent = await root(env);
    // The kernel's batched background work (index records, retention marks, some from the tests
    // before) written first: a batch sent after the FLUSH could find the server empty before the
    // spawn does and load every script, and the spawn would then need no EVAL (seen once in CI).
    await k().flushIndex();
    await k().retention.drain();
    await env.redis.script('FLUSH');
    const sha = (name: string) => createHash('sha1').update(assemble(name)).digest('hex');
    expect(await env.redis.script('EXISTS', sha('tree'))).toEqual([0]);
    const { sent, stop } = recordCommands(env.redis);
    // The key of each EVAL (its KEYS[1]): whose call it answers.
    const evalKeys: string[] = [];
    const recorded = env.redis.sendCommand.bind(env.redis) as (...args: unknown[]) => unknown;
    env.redis.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
      if (command.name === 'eval') evalKeys.push(String(command.args[2]));
      return recorded(command, ...rest);
    }) as typeof env.redis.sendCommand;
    try {
      const child = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'after a flush' });
      expect(child.pid).toBe(`${parent.pid}.1`);
      // EVALSHA first, then one EVAL on the tree's key: the call's own. (The kernel's background
      // work, index and retention batches on keys of their own, may also have found the server
      // empty meanwhile, each EVALing once, as many as were in flight.)
      expect(sent[0]).toBe('evalsha');
      expect(evalKeys.filter((key) => key.includes(`{${parent.pid}}`))).toHaveLength(1);
      // every script, the ones this call did not use too
      await until(async () => {
        const loaded = (await env.redis.script('EXISTS', sha('tree'), sha('complete'))) as number[];
        return loaded.join() === '1,1';
      });
      sent.length = 0;
      await k().admin.tree(parent.pid);
      // (the kernel's background work may send its own EVALSHA meanwhile: none needs an EVAL)
      expect(sent).toContain('evalsha');
      expect(sent).not.toContain('eval');
    } finally {
      stop();
    }
  });
});
