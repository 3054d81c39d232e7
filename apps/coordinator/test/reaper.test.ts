import { type Kernel, mintToken, type StaleLaunch } from '@libos/kernel';
import { type LaunchJob, LEGACY_QUEUE_PREFIX, launchJobId, legacyLaunchQueueName } from '@libos/protocol';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { Reaper } from '../src/reaper.js';
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

test('a launch that ran and ended after the sweep read it as runnable is neither enqueued again nor reported', async () => {
  // The coordinator's own reaper lets go of the index shards (the tests after this one sweep alone).
  await h.coordinator.reaper.stop();
  const root = await h.admin.createProcess({ goal: 'parent', resource_budget: { children: 1 } });
  const parent = h.as(root.token!);
  // A pool of its own: the queue holds this launch alone.
  await h.admin.putImage('echo-raced', {
    command: 'sh',
    args: ['-c', 'exit 0', 'sh', '{result_file}'],
    pool: 'raced',
  });
  const child = await parent.spawn({ goal: 'ran meanwhile', image: 'echo-raced' });
  const { kernel, launcher } = h.coordinator;
  const queue = launcher.queueOf('raced', child.pid);
  const id = launchJobId(child.pid, 1);
  // The page of stale launches, as the sweep read it before the child ran.
  const page: StaleLaunch[] = [{ pid: child.pid, attempt: 1, pool: 'raced' }];
  // Then a worker takes the job, claims, runs and completes the attempt, and finishes the job.
  const connection = new Redis(h.redis.url, { maxRetriesPerRequest: null });
  const taker = new Worker<LaunchJob>(queue.name, null, { connection, prefix: queue.opts.prefix });
  try {
    const taken = await taker.getNextJob('taker');
    expect(taken?.id).toBe(id);
    const claimed = await kernel.worker.claim(child.pid, 1, {
      workerId: 'taker',
      tokenHash: mintToken(child.pid).tokenHash,
      leaseMs: 60_000,
    });
    await kernel.worker.complete(child.pid, 1, claimed.fence, {
      terminal: { type: 'captured' },
      report: 'done',
      usage: { prompt_tokens: 0, completion_tokens: 0, steps: 0, wall_ms: 1 },
    });
    await taken!.moveToCompleted({ status: 'exited' }, 'taker', false);
  } finally {
    await taker.close();
    connection.disconnect();
  }
  expect((await h.admin.getProcess(child.pid)).status).toBe('exited');

  // A reaper whose page is that stale one (the kernel's own answers otherwise).
  const admin = Object.create(kernel.admin) as Kernel['admin'];
  admin.staleLaunches = async () => ({ launches: page, next_cursor: null });
  const staged = Object.assign(Object.create(kernel) as Kernel, { admin });
  const lines: { msg: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const reaper = new Reaper(staged, launcher, log, { intervalMs: 3_600_000, relaunchAfterMs: 0 });
  try {
    const report = await reaper.sweep();
    expect(report.shards.length).toBeGreaterThan(0);
    expect(report.relaunched).toEqual([]);
    // The finished job stays (the board shows it) and nothing claims a launch was lost.
    expect(await (await queue.getJob(id))?.getState()).toBe('completed');
    expect(lines.map((line) => line.msg)).toEqual([]);
  } finally {
    await reaper.stop();
  }
});

test('a relaunch pass reads one page of runnable rows a sweep, goes on from there, and starts again after the window', async () => {
  await h.coordinator.reaper.stop(); // this test's reaper sweeps alone
  const root = await h.admin.createProcess({ goal: 'parent', resource_budget: { children: 5 } });
  const parent = h.as(root.token!);
  const lost: string[] = [];
  for (let i = 0; i < 5; i++) lost.push((await parent.spawn({ goal: `lost ${i}`, image: 'echo' })).pid);
  const queue = h.coordinator.launcher.queueOf('default', lost[0]!);
  for (const pid of lost) await (await queue.getJob(launchJobId(pid, 1)))?.remove();
  // Long enough that the whole pass and the sweep after it run within one window on a loaded machine.
  const windowMs = 1_500;
  await new Promise((resolve) => setTimeout(resolve, windowMs + 50));

  // The kernel's own answers, each page's call recorded.
  const { kernel, launcher } = h.coordinator;
  const calls: { cursor: string | undefined; limit: number | undefined; next: string | null }[] = [];
  const admin = Object.create(kernel.admin) as Kernel['admin'];
  admin.staleLaunches = async (before, cursor, limit, shards) => {
    const page = await kernel.admin.staleLaunches(before, cursor, limit, shards);
    calls.push({ cursor, limit, next: page.next_cursor });
    return page;
  };
  const staged = Object.assign(Object.create(kernel) as Kernel, { admin });
  const reaper = new Reaper(staged, launcher, pino({ level: 'silent' }), {
    intervalMs: 3_600_000,
    relaunchAfterMs: windowMs,
    relaunchPage: 2,
  });
  try {
    const relaunched: string[] = [];
    let sweeps = 0;
    do {
      const report = await reaper.sweep();
      sweeps += 1;
      expect(calls).toHaveLength(sweeps); // one page a sweep
      const call = calls[sweeps - 1]!;
      expect(call.limit).toBe(2);
      // The first page starts the pass; each later one starts where the one before ended.
      expect(call.cursor).toBe(sweeps === 1 ? undefined : (calls[sweeps - 2]!.next ?? undefined));
      expect(report.relaunched.length).toBeLessThanOrEqual(2);
      relaunched.push(...report.relaunched);
    } while (calls[sweeps - 1]!.next !== null && sweeps < 100);
    expect(sweeps).toBeGreaterThanOrEqual(3); // five lost launches, two rows a page
    expect(relaunched).toEqual(expect.arrayContaining(lost));
    for (const pid of lost)
      expect((await queue.getJob(launchJobId(pid, 1)))?.data).toEqual({ pid, attempt: 1 });

    // The pass is over: the next waits for the window, then starts from the top and finds nothing lost.
    await reaper.sweep();
    expect(calls).toHaveLength(sweeps);
    await new Promise((resolve) => setTimeout(resolve, windowMs + 50));
    const again = await reaper.sweep();
    expect(calls).toHaveLength(sweeps + 1);
    expect(calls[sweeps]!.cursor).toBeUndefined();
    expect(again.relaunched).toEqual([]);
  } finally {
    await reaper.stop();
  }
});
