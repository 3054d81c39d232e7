import { describe, expect, it } from 'vitest';
import { refusal, root, runningChild, useKernel } from './helpers.js';

// ackedRetention 1: a read trims the acknowledged messages past one (its default is 10,000).
const env = useKernel({
  limits: { mailboxMaxBytes: 1_000, mailboxMax: 30, treeMailboxBytes: 2_500, ackedRetention: 1 },
});
const k = () => env.kernel;
/** The content bytes a tree's mailboxes hold, as send.lua counts them. */
const treeBytes = async (pid: string) => Number(await env.redis.hget(k().keys.seq(pid), 'mb'));

describe("a tree's mailbox bytes", () => {
  it('refuses a send past the bound of all its mailboxes together (bound: tree_bytes), until acknowledged messages or deleted mailboxes make room', async () => {
    const r = await root(env, { resource_budget: { children: 5 } });
    const [a, b, c] = [
      await runningChild(env, r.pid),
      await runningChild(env, r.pid),
      await runningChild(env, r.pid),
    ];
    // Each message's content is {"body":"…","payload":null}: 700 + 26 bytes.
    const body = 'y'.repeat(700);
    for (const child of [a, b, c])
      await k().tools.send_process_message({ pid: r.pid }, { to: child.pid, body });
    // Three mailboxes, each under its own bound (1,000), hold 2,178 of the tree's 2,500.
    const full = await refusal(k().tools.send_process_message({ pid: r.pid }, { to: 'self', body }));
    expect(full.code).toBe('resource_exhausted');
    expect(full.reason).toBe('mailbox_full');
    expect(full.details).toMatchObject({ bound: 'tree_bytes', limit: 2_500, bytes: 2_178, requested: 726 });
    expect((await k().tools.read_process_messages({ pid: r.pid }, { ack: false })).messages).toHaveLength(0);
    // The recipient's acknowledged message is trimmed to make room in the tree too.
    await k().tools.read_process_messages({ pid: a.pid }, {});
    await k().tools.send_process_message({ pid: r.pid }, { to: a.pid, body });
    expect(
      (await refusal(k().tools.send_process_message({ pid: r.pid }, { to: 'self', body }))).details,
    ).toMatchObject({
      bound: 'tree_bytes',
      bytes: 2_178,
    });
    // A deleted process's mailbox leaves the tree's count with it.
    await k().tools.process_exit({ pid: b.pid }, {});
    await k().retention.deleteTree(b.pid);
    await k().tools.send_process_message({ pid: r.pid }, { to: 'self', body });
    expect(await treeBytes(r.pid)).toBe(3 * 726);
  });
});

describe("a tree's mailbox bytes, as messages leave", () => {
  it('counts off what a read trims past the acknowledged messages kept', async () => {
    const r = await root(env);
    const body = 'y'.repeat(74); // 100 bytes of content
    for (let i = 0; i < 30; i++) {
      await k().tools.send_process_message({ pid: r.pid }, { to: 'self', body });
      await k().tools.read_process_messages({ pid: r.pid }, {});
    }
    // One acknowledged message is kept; the 29 trimmed are no longer counted (3,000 would refuse
    // every send of the tree for good).
    expect(await treeBytes(r.pid)).toBe(100);
    const child = await runningChild(env, r.pid);
    await k().tools.send_process_message({ pid: r.pid }, { to: child.pid, body });
    expect(await treeBytes(r.pid)).toBe(200);
  });
});
