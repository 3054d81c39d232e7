import { type LaunchJob, LEGACY_QUEUE_PREFIX, launchJobId, legacyLaunchQueueName } from '@libos/protocol';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type Harness, startHarness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ LIBOS_REAPER_INTERVAL_MS: '100', LIBOS_RELAUNCH_AFTER_MS: '300' });
  await h.admin.putImage('echo', { command: 'sh', args: ['-c', 'exit 0', 'sh', '{result_file}'] });
});
afterAll(async () => {
  await h.stop();
});

async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test('a runnable process whose launch job failed before its claim is enqueued again by the reaper', async () => {
  const root = await h.admin.createProcess({ goal: 'parent', resource_budget: { children: 1 } });
  const parent = h.as(root.token!);
  const child = await parent.spawn({ goal: 'failed before its claim', image: 'echo' });
  const queue = h.coordinator.launcher.queueOf('default', child.pid);
  const id = launchJobId(child.pid, 1);
  // A worker takes the job and fails it without claiming the attempt (its Redis failed over).
  const connection = new Redis(h.redis.url, { maxRetriesPerRequest: null });
  const taker = new Worker<LaunchJob>(queue.name, null, { connection, prefix: queue.opts.prefix });
  try {
    const token = 'taker';
    const taken = await taker.getNextJob(token);
    expect(taken?.id).toBe(id);
    await taken!.moveToFailed(new Error('claim failed: the primary went away'), token);
    expect(await (await queue.getJob(id))?.getState()).toBe('failed');
    expect((await h.admin.getProcess(child.pid)).status).toBe('runnable');

    await until(async () => (await (await queue.getJob(id))?.getState()) === 'waiting', 5_000);
    expect((await queue.getJob(id))?.data).toEqual({ pid: child.pid, attempt: 1 });
    // Withdrawn again, so the next test counts only its own launches.
    await parent.signal({ child_pid: child.pid, signal: 'cancel' });
    await until(async () => (await queue.getJob(id)) === undefined, 5_000);
  } finally {
    await taker.close();
    connection.disconnect();
  }
});

test('a runnable process whose launch never reached the queue is enqueued again, once, by the reaper', async () => {
  const root = await h.admin.createProcess({ goal: 'parent', resource_budget: { children: 2 } });
  const parent = h.as(root.token!);
  const lost = await parent.spawn({ goal: 'lost', image: 'echo' });
  const kept = await parent.spawn({ goal: 'kept', image: 'echo' });
  const queue = h.coordinator.launcher.queueOf('default', kept.pid);
  const keptJob = await queue.getJob(launchJobId(kept.pid, 1));
  expect(keptJob).toBeDefined();
  // A coordinator that died between recording the launch and enqueueing it leaves this.
  await (await queue.getJob(launchJobId(lost.pid, 1)))?.remove();
  expect(await queue.getJob(launchJobId(lost.pid, 1))).toBeUndefined();

  await until(async () => (await queue.getJob(launchJobId(lost.pid, 1))) !== undefined, 5_000);
  const relaunched = await queue.getJob(launchJobId(lost.pid, 1));
  expect(relaunched?.data).toEqual({ pid: lost.pid, attempt: 1 });
  expect((await h.admin.getProcess(lost.pid)).status).toBe('runnable');
  // The other launch was left alone: same job, same timestamp.
  expect((await queue.getJob(launchJobId(kept.pid, 1)))?.timestamp).toBe(keptJob?.timestamp);
  expect(await queue.getJobCounts('waiting')).toMatchObject({ waiting: 2 });
});

test('a launch still in the pre-upgrade {libos} queue is not lost to the reaper, and a cancel withdraws it there', async () => {
  const root = await h.admin.createProcess({ goal: 'upgrade', resource_budget: { children: 1 } });
  const parent = h.as(root.token!);
  const child = await parent.spawn({ goal: 'old job', image: 'echo' });
  const id = launchJobId(child.pid, 1);
  // As an old coordinator had enqueued it: `launch-default` under the prefix `{libos}`.
  const connection = new Redis(h.redis.url, { maxRetriesPerRequest: null });
  const old = new Queue<LaunchJob>(legacyLaunchQueueName('default'), {
    connection,
    prefix: LEGACY_QUEUE_PREFIX,
  });
  try {
    await (await h.coordinator.launcher.queueOf('default', child.pid).getJob(id))?.remove();
    await old.add('launch', { pid: child.pid, attempt: 1 }, { jobId: id, attempts: 1 });
    // Several relaunch windows (300 ms) pass: the reaper finds the job where it is.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await h.coordinator.launcher.queueOf('default', child.pid).getJob(id)).toBeUndefined();
    expect(await old.getJob(id)).toBeDefined();

    await parent.signal({ child_pid: child.pid, signal: 'cancel' });
    await until(async () => (await old.getJob(id)) === undefined, 5_000);
    expect(await old.count()).toBe(0);
  } finally {
    await old.close();
    connection.disconnect();
  }
});
