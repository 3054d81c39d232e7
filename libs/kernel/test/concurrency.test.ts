import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kernel, mintToken } from '../src/index.js';
import { root, USAGE, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;
const others: { redis: Redis | Cluster; kernel: Kernel }[] = [];

// Separate connections, so calls really race inside Redis rather than queue on one socket.
beforeAll(() => {
  for (let i = 0; i < 4; i++) {
    const redis = env.client.isCluster
      ? (env.client as Cluster).duplicate()
      : (env.client as Redis).duplicate();
    redis.on('error', () => {});
    others.push({ redis, kernel: new Kernel({ redis, keyPrefix: env.prefix }) });
  }
});
afterAll(async () => {
  for (const o of others) {
    await o.kernel.close();
    o.redis.disconnect();
  }
});
const on = (i: number) => (others[i % others.length] as { kernel: Kernel }).kernel;

async function claimed(parent: string) {
  const spawned = await k().tools.spawn_child_process({ pid: parent }, { goal: 'c' });
  const claim = await k().worker.claim(spawned.pid, 1, {
    workerId: 'w',
    tokenHash: mintToken(spawned.pid).tokenHash,
    leaseMs: 60_000,
  });
  return { pid: spawned.pid, fence: claim.fence };
}

describe('concurrency', () => {
  it('100 parallel sends to one mailbox lose none and keep a stable order', async () => {
    const parent = await root(env);
    const children = await Promise.all(Array.from({ length: 10 }, () => claimed(parent.pid)));
    const sends = Array.from({ length: 100 }, (_, i) => {
      const child = children[i % 10] as { pid: string };
      return on(i).tools.send_process_message({ pid: child.pid }, { to: 'parent', body: `${i}` });
    });
    const sent = await Promise.all(sends);
    expect(new Set(sent.map((s) => s.message_id)).size).toBe(100);
    const first = await k().tools.read_process_messages({ pid: parent.pid }, { limit: 1000, ack: false });
    const second = await k().tools.read_process_messages({ pid: parent.pid }, { limit: 1000, ack: false });
    const order = first.messages.map((m) => m.message_id);
    expect(order).toHaveLength(100);
    expect(second.messages.map((m) => m.message_id)).toEqual(order);
    expect(new Set(order)).toEqual(new Set(sent.map((s) => s.message_id)));
    const seq = order.map((id) => Number(id.split('/m')[1]));
    expect([...seq].sort((a, b) => a - b)).toEqual(seq);
    // per connection, sends land in the order they were issued
    for (let c = 0; c < 4; c++) {
      const mine = first.messages.map((m) => Number(m.body)).filter((i) => i % 4 === c);
      expect(mine).toEqual([...mine].sort((a, b) => a - b));
    }
    const paged: string[] = [];
    for (;;) {
      const page = await k().tools.read_process_messages({ pid: parent.pid }, { limit: 7 });
      paged.push(...page.messages.map((m) => m.message_id));
      if (!page.has_more) break;
    }
    expect(paged).toEqual(order);
  });

  it('cancel racing a completion ends in exactly one terminal transition', async () => {
    const parent = await root(env, { resource_budget: { tokens: 1_000_000 } });
    const outcomes = new Set<string>();
    for (let i = 0; i < 30; i++) {
      const child = await claimed(parent.pid);
      const exits: string[] = [];
      const release = await k().wakeHub.listen(k().keys.exitTopic(child.pid), (e) => {
        if (e.type === 'message') exits.push(e.message);
      });
      const [cancel, complete] = await Promise.allSettled([
        on(i).tools.signal_child_process({ pid: parent.pid }, { child_pid: child.pid, signal: 'cancel' }),
        on(i + 1).worker.complete(child.pid, 1, child.fence, {
          terminal: { type: 'captured' },
          report: i,
          usage: USAGE,
        }),
      ]);
      expect(complete.status).toBe('fulfilled');
      const view = await k().admin.getProcess(child.pid);
      if (cancel.status === 'fulfilled') {
        expect(view.status).toBe('killed');
        expect(view.result_oid).toBeNull();
      } else {
        expect(view.status).toBe('exited');
        expect(cancel.reason).toMatchObject({ code: 'failed_precondition', details: { reason: 'terminal' } });
      }
      outcomes.add(view.status);
      await new Promise((r) => setTimeout(r, 20));
      release();
      expect(exits.map((message) => message.split(' ')[0])).toEqual([view.status]);
    }
    const budget = (await k().admin.getProcess(parent.pid)).resource_budget.tokens;
    expect(budget).toEqual({ limit: 1_000_000, reserved: 0, used: 30 * 15, remaining: 1_000_000 - 30 * 15 });
    expect(outcomes.size).toBeGreaterThanOrEqual(1);
  });

  it('cancel racing a claim never leaves a killed process running', async () => {
    const parent = await root(env);
    for (let i = 0; i < 20; i++) {
      const spawned = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'c' });
      const [claim, cancel] = await Promise.allSettled([
        on(i).worker.claim(spawned.pid, 1, {
          workerId: 'w',
          tokenHash: mintToken(spawned.pid).tokenHash,
          leaseMs: 60_000,
        }),
        on(i + 1).tools.signal_child_process(
          { pid: parent.pid },
          { child_pid: spawned.pid, signal: 'cancel' },
        ),
      ]);
      expect(cancel.status).toBe('fulfilled');
      const view = await k().admin.getProcess(spawned.pid);
      if (claim.status === 'fulfilled') {
        expect(view).toMatchObject({ status: 'running', pending_signal: { signal: 'cancel' } });
      } else {
        expect(view.status).toBe('killed');
      }
    }
  });

  it('50 concurrent spawns against one budget never over-reserve', async () => {
    const parent = await root(env, { resource_budget: { tokens: 1000, children: 100 } });
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) =>
        on(i).tools.spawn_child_process(
          { pid: parent.pid },
          { goal: `c${i}`, resource_budget: { tokens: 100, children: 0 } },
        ),
      ),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r) => r.status === 'rejected');
    expect(ok).toHaveLength(10);
    for (const r of refused) {
      expect((r as PromiseRejectedResult).reason).toMatchObject({
        code: 'resource_exhausted',
        details: { reason: 'budget' },
      });
    }
    const budget = (await k().admin.getProcess(parent.pid)).resource_budget;
    expect(budget.tokens).toEqual({ limit: 1000, reserved: 1000, used: 0, remaining: 0 });
    expect(budget.children.used).toBe(10);
    expect((await k().tools.list_child_processes({ pid: parent.pid }, {})).children).toHaveLength(10);
  });
});
