import { shChildLaunch } from '@libos/examples';
import {
  type LaunchJob,
  LEGACY_QUEUE_PREFIX,
  launchJobId,
  launchQueueName,
  legacyLaunchQueueName,
  QUEUE_PREFIX,
} from '@libos/protocol';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { strayQueues } from '../src/stray-drain.js';
import { eventually, image, root, spawn, useHarness, waitChild } from './helpers.js';

// Launches where this worker's own queues do not reach still run: those an older coordinator put in
// the one `{libos}` queue (an upgrade), and those of a coordinator with another LIBOS_LAUNCH_SHARDS.
const h = useHarness();
let connection: Redis;
let old: Queue<LaunchJob>;

beforeAll(() => {
  connection = new Redis(h.server.url, { maxRetriesPerRequest: null });
  old = new Queue<LaunchJob>(legacyLaunchQueueName('default'), { connection, prefix: LEGACY_QUEUE_PREFIX });
});
afterAll(async () => {
  await old?.close();
  connection?.disconnect();
});

it('runs a launch left in the pre-upgrade {libos} queue, then retires that queue’s drainer', async () => {
  const echo = await image(h, { ...shChildLaunch('echo'), deadline_ms: 20_000 });
  const parent = await root(h, { steps: 10, wall_ms: 60_000 });
  const child = await spawn(h, parent, echo, { input: { q: 'old' } });
  // The kernel's launch went to the new queue; as an old coordinator, put it in the old one instead.
  const id = launchJobId(child, 1);
  await (await h.queue().getJob(id))?.remove();
  await old.add('launch', { pid: child, attempt: 1 }, { jobId: id, attempts: 1 });
  expect(await h.queue().getJob(id)).toBeUndefined();
  expect(await old.count()).toBe(1);

  await h.startWorker();
  const waited = await waitChild(h, parent, child, 20_000);
  expect(waited).toMatchObject({ ready: true, status: 'exited', outcome: { type: 'completed' } });
  expect(await (await old.getJob(id))?.getState()).toBe('completed');
  // Drained: its BullMQ worker (and blocking connection) goes; the new queue's stays.
  await eventually(
    async () => ((await old.getWorkersCount()) === 0 ? true : undefined),
    10_000,
    'drainer gone',
  );
  expect(await h.queue().getWorkersCount()).toBe(1);
});

it('runs a launch a coordinator with another LIBOS_LAUNCH_SHARDS put in a shard this worker does not consume', async () => {
  // A pool of its own, so the worker of the test above (pool default) stays out of it.
  const echo = await image(h, { ...shChildLaunch('echo'), deadline_ms: 20_000, pool: 'gpu' });
  const parent = await root(h, { steps: 10, wall_ms: 60_000 });
  const child = await spawn(h, parent, echo, { input: { q: 'shard' } });
  // As a coordinator spreading the pool over 4 queues would: shard 3 of them.
  const other = new Queue<LaunchJob>(launchQueueName('gpu', 3, 4), { connection, prefix: QUEUE_PREFIX });
  try {
    const id = launchJobId(child, 1);
    await (await h.queue('gpu').getJob(id))?.remove();
    await other.add('launch', { pid: child, attempt: 1 }, { jobId: id, attempts: 1 });
    const lines: string[] = [];
    await h.startWorker(
      { LIBOS_POOLS: 'gpu' },
      pino({ level: 'info' }, { write: (line: string) => lines.push(line) }),
    );
    // said on start, as the setting to fix
    expect(lines.join('')).toContain('another LIBOS_LAUNCH_SHARDS');
    expect(lines.join('')).toContain('{launch-gpu@3}');
    const waited = await waitChild(h, parent, child, 20_000);
    expect(waited).toMatchObject({ ready: true, status: 'exited', outcome: { type: 'completed' } });
    expect(await (await other.getJob(id))?.getState()).toBe('completed');
    await eventually(
      async () => ((await other.getWorkersCount()) === 0 ? true : undefined),
      10_000,
      'drainer gone',
    );
  } finally {
    await other.close();
  }
});

it('names every queue of a pool but its own: the pre-upgrade one and the other shard counts’', () => {
  const one = strayQueues('gpu', 1).map((ref) => ref.name);
  expect(one).toHaveLength(65);
  expect(one).toContain('launch-gpu');
  expect(one).toContain('{launch-gpu@0}');
  expect(one).not.toContain('{launch-gpu}');
  const four = strayQueues('gpu', 4).map((ref) => ref.name);
  expect(four).toContain('{launch-gpu}');
  expect(four).toContain('{launch-gpu@4}');
  expect(four).not.toContain('{launch-gpu@3}');
  expect(four).toHaveLength(62);
});
