import { startRedis, type TestRedis, uniquePrefix } from '@libos/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kernel } from '../src/index.js';
import { IMAGE, refusal } from './helpers.js';

// A real primary and a real replica (two redis-servers): a failover that loses writes is the
// replica promoted after replication was cut, as when a primary dies before its replica caught up.
let primary: TestRedis;
let replica: TestRedis;
const clients: Redis[] = [];
const kernels: Kernel[] = [];

function connect(server: TestRedis): Redis {
  const client = new Redis(server.url);
  client.on('error', () => {});
  clients.push(client);
  return client;
}

function kernelOn(client: Redis, prefix: string, replicas = 0): Kernel {
  const kernel = new Kernel({
    redis: client,
    keyPrefix: prefix,
    replication: { replicas, timeoutMs: 3_000 },
  });
  kernels.push(kernel);
  return kernel;
}

async function replicate(from: TestRedis, to: Redis): Promise<void> {
  const port = new URL(from.url).port;
  await to.call('REPLICAOF', '127.0.0.1', port);
  for (;;) {
    const info = await to.info('replication');
    if (/master_link_status:up/.test(info)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function caughtUp(primaryClient: Redis): Promise<void> {
  expect(await primaryClient.wait(1, 5_000)).toBe(1);
}

beforeAll(async () => {
  [primary, replica] = await Promise.all([startRedis({ own: true }), startRedis({ own: true })]);
});

afterAll(async () => {
  for (const kernel of kernels) await kernel.close();
  for (const client of clients) client.disconnect();
  await Promise.all([primary?.stop(), replica?.stop()]);
});

describe('pids after a failover that lost writes', () => {
  it('never hands out a pid, object id or message id again, and keeps counting up by one otherwise', async () => {
    const prefix = uniquePrefix('repl');
    const onPrimary = connect(primary);
    const onReplica = connect(replica);
    await replicate(primary, onReplica);
    const before = kernelOn(onPrimary, prefix);
    await before.admin.putImage('echo', IMAGE);
    const root = await before.admin.createRoot({ goal: 'tree', image: 'echo' });
    const kept = [];
    for (let i = 0; i < 3; i++)
      kept.push(await before.tools.spawn_child_process({ pid: root.pid }, { goal: `kept ${i}` }));
    // Same server, no failover: plain +1 numbering.
    const numbers = kept.map((child) => Number(child.pid.split('.')[1]));
    expect(numbers[1]).toBe((numbers[0] as number) + 1);
    expect(numbers[2]).toBe((numbers[0] as number) + 2);
    const keptObject = await before.tools.create_object({ pid: root.pid }, { payload: 'kept' });
    await caughtUp(onPrimary);

    // Replication cut: these are acknowledged by the primary alone, then lost with it.
    await onReplica.call('REPLICAOF', 'NO', 'ONE');
    const lost = [];
    for (let i = 0; i < 5; i++)
      lost.push(await before.tools.spawn_child_process({ pid: root.pid }, { goal: `lost ${i}` }));
    const lostObject = await before.tools.create_object({ pid: root.pid }, { payload: 'lost' });
    const lostMessage = await before.tools.send_process_message(
      { pid: root.pid },
      { to: 'self', body: 'lost' },
    );

    // The promoted replica has the kept children and none of the lost ones.
    const after = kernelOn(onReplica, prefix);
    expect((await after.admin.getProcess(kept[2]?.pid as string)).goal).toBe('kept 2');
    expect((await refusal(after.admin.getProcess(lost[0]?.pid as string))).code).toBe('not_found');

    const reborn = [];
    for (let i = 0; i < 5; i++)
      reborn.push(await after.tools.spawn_child_process({ pid: root.pid }, { goal: `new ${i}` }));
    const newObject = await after.tools.create_object({ pid: root.pid }, { payload: 'new' });
    const newMessage = await after.tools.send_process_message({ pid: root.pid }, { to: 'self', body: 'new' });

    const everyPid = [...kept, ...lost, ...reborn].map((child) => child.pid);
    expect(new Set(everyPid).size).toBe(everyPid.length);
    const lostNumbers = lost.map((child) => Number(child.pid.split('.')[1]));
    const newNumbers = reborn.map((child) => Number(child.pid.split('.')[1]));
    // Ordered: every new number is above every number handed out before, and +1 after the jump.
    expect(Math.min(...newNumbers)).toBeGreaterThan(Math.max(...lostNumbers));
    expect(newNumbers[4]).toBe((newNumbers[0] as number) + 4);
    expect(newObject.oid).not.toBe(lostObject.oid);
    expect(newObject.oid).not.toBe(keptObject.oid);
    expect(newMessage.message_id).not.toBe(lostMessage.message_id);
    // Listing order (newest first) still follows spawn order across the jump, by parent and by
    // tree (a walk of the tree's numbers steps over the numbers the jump skipped).
    const expected = [...kept, ...reborn].map((child) => child.pid).reverse();
    const listed = await after.admin.listProcesses({ parent: root.pid });
    expect(listed.processes.map((row) => row.pid)).toEqual(expected);
    const byTree = await after.admin.listProcesses({ root: root.pid, limit: 100 });
    expect(byTree.processes.map((row) => row.pid)).toEqual([...expected, root.pid]);
    expect(byTree.next_cursor).toBeNull();
    // A lost pid reads as never created, not as deleted: it was handed out by a server whose
    // writes are gone, and the jump put it in a gap.
    const gone = await refusal(after.admin.getProcess(lost[0]?.pid as string));
    expect(gone.code).toBe('not_found');
    expect(gone.reason).toBeUndefined();
  });
});

describe('LIBOS_REDIS_MIN_REPLICAS (WAIT after each state change)', () => {
  it('answers a change once the replica holds it, and 503 unavailable/replication when none confirms', async () => {
    const prefix = uniquePrefix('wait');
    const onPrimary = connect(primary);
    const onReplica = connect(replica);
    await onPrimary.call('REPLICAOF', 'NO', 'ONE');
    await replicate(primary, onReplica);
    const kernel = kernelOn(onPrimary, prefix, 1);
    await kernel.admin.putImage('echo', IMAGE);
    const root = await kernel.admin.createRoot({ goal: 'tree', image: 'echo' });
    const children = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        kernel.tools.spawn_child_process({ pid: root.pid }, { goal: `c${i}` }),
      ),
    );
    // Acknowledged means on the replica: read it there at once, no waiting.
    const replicaKernel = kernelOn(connect(replica), prefix);
    for (const child of children)
      expect((await replicaKernel.admin.getProcess(child.pid)).status).toBe('runnable');

    await onReplica.call('REPLICAOF', 'NO', 'ONE');
    const refused = await refusal(
      kernel.tools.spawn_child_process({ pid: root.pid }, { goal: 'unconfirmed' }),
    );
    expect(refused.code).toBe('unavailable');
    expect(refused.details).toMatchObject({ reason: 'replication', required: 1, confirmed: 0 });
    expect(refused.message).toMatch(/LIBOS_REDIS_MIN_REPLICAS/);
    // Reads need no replica.
    expect((await kernel.admin.getProcess(root.pid)).pid).toBe(root.pid);
  });
});
