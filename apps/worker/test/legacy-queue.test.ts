import { shChildLaunch } from '@libos/examples';
import { type LaunchJob, LEGACY_QUEUE_PREFIX, launchJobId, legacyLaunchQueueName } from '@libos/protocol';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually, image, root, spawn, useHarness, waitChild } from './helpers.js';

// The upgrade: launches an older coordinator put in the one `{libos}` queue still run.
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
