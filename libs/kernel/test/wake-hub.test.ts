import { describe, expect, it } from 'vitest';
import { mastersOf } from '../src/index.js';
import { root, runningChild, USAGE, useKernel } from './helpers.js';

const LINGER_MS = 300;
const env = useKernel({ limits: { wakeLingerMs: LINGER_MS } });
const k = () => env.kernel;

async function until(check: () => Promise<boolean> | boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Subscribers of a sharded channel, as Redis counts them (on every master of a cluster). */
async function subscribers(channel: string): Promise<number> {
  let count = 0;
  for (const node of mastersOf(env.client)) {
    const reply = (await node.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
    count += Number(reply[1]);
  }
  return count;
}

describe('the wake hub', () => {
  it('serves every wait in a tree from one subscription, which lingers after the last and then goes', async () => {
    const parent = await root(env);
    const children = await Promise.all(Array.from({ length: 50 }, () => runningChild(env, parent.pid)));
    const channel = k().keys.exitTopic(parent.pid).channel;
    const waits = children.map((child) =>
      k().tools.wait_child_process({ pid: parent.pid }, { child_pid: child.pid }),
    );
    await until(async () => k().wakeHub.size === 50 && (await subscribers(channel)) === 1);
    expect(k().wakeHub.subscriptions).toBe(1);

    // Each wait is woken by its own child only.
    const [first, ...rest] = children;
    await k().worker.complete(first!.pid, 1, first!.fence, { terminal: { type: 'captured' }, usage: USAGE });
    expect(await waits[0]).toMatchObject({ ready: true, child_pid: first!.pid, status: 'exited' });
    expect(k().wakeHub.size).toBe(49);
    await Promise.all(
      rest.map((child) =>
        k().worker.complete(child.pid, 1, child.fence, { terminal: { type: 'captured' }, usage: USAGE }),
      ),
    );
    const results = await Promise.all(waits);
    expect(results.map((r) => r.child_pid)).toEqual(children.map((c) => c.pid));
    expect(results.every((r) => r.ready && r.status === 'exited')).toBe(true);

    expect(k().wakeHub.size).toBe(0);
    expect(await subscribers(channel)).toBe(1); // lingering for the tree's next waiter
    await until(async () => (await subscribers(channel)) === 0, 5 * LINGER_MS);
    expect(k().wakeHub.subscriptions).toBe(0);
  });

  it('a wait in a lingering channel is still woken', async () => {
    const parent = await root(env);
    const [a, b] = [await runningChild(env, parent.pid), await runningChild(env, parent.pid)];
    const first = k().tools.wait_child_process({ pid: parent.pid }, { child_pid: a.pid });
    await until(() => k().wakeHub.size === 1);
    await k().worker.complete(a.pid, 1, a.fence, { terminal: { type: 'captured' }, usage: USAGE });
    await first;
    expect(k().wakeHub.subscriptions).toBe(1);
    const second = k().tools.wait_child_process({ pid: parent.pid }, { child_pid: b.pid });
    await until(() => k().wakeHub.size === 1);
    await k().worker.complete(b.pid, 1, b.fence, { terminal: { type: 'captured' }, usage: USAGE });
    expect(await second).toMatchObject({ ready: true, status: 'exited' });
  });
});

describe("a tree's row changes on its `ev` channel", () => {
  it('one listener hears spawns, claims, pauses, resumes and exits of the whole tree; renewals are silent', async () => {
    const parent = await root(env);
    const heard: Array<[string, number, string]> = [];
    const release = await k().wakeHub.listen(k().keys.treeTopic(parent.pid), (event) => {
      if (event.type === 'message')
        heard.push(...(JSON.parse(event.message) as Array<[string, number, string]>));
    });
    const child = await runningChild(env, parent.pid);
    await until(() => heard.some(([pid, , status]) => pid === child.pid && status === 'running'));
    expect(heard.find(([pid]) => pid === child.pid)).toEqual([child.pid, 1, 'runnable']);

    const before = heard.length;
    await k().worker.renew(child.pid, 1, child.fence, 60_000);
    await k().admin.signal(child.pid, { signal: 'pause' });
    await until(() => heard.some(([pid, , status]) => pid === child.pid && status === 'paused'));
    expect(heard.slice(before).map(([pid, , status]) => [pid, status])).toEqual([[child.pid, 'paused']]);
    await k().admin.signal(child.pid, { signal: 'resume' });
    await k().worker.complete(child.pid, 1, child.fence, { terminal: { type: 'captured' }, usage: USAGE });
    await until(() => heard.some(([pid, , status]) => pid === child.pid && status === 'exited'));
    const childStatuses = heard.filter(([pid]) => pid === child.pid).map(([, , status]) => status);
    // Every change of the row, in order, each with a higher generation; the renewal is not one.
    const gens = heard.filter(([pid]) => pid === child.pid).map(([, gen]) => gen);
    expect(gens).toEqual([...gens].sort((a, b) => a - b));
    expect(childStatuses[0]).toBe('runnable');
    expect(childStatuses).toContain('paused');
    expect(childStatuses.at(-1)).toBe('exited');
    release();
  });
});
