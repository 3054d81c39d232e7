import type { RedisClient } from '@libos/kernel';
import {
  type LaunchJob,
  LEGACY_QUEUE_PREFIX,
  launchJobId,
  launchQueueNames,
  launchQueueOf,
  legacyLaunchQueueName,
  QUEUE_PREFIX,
} from '@libos/protocol';
import { type Job, Queue } from 'bullmq';
import type { Metrics } from './metrics.js';

/** How much of its own history BullMQ keeps: bounded, so its keys do not grow with launches ever made. */
export interface QueueRetention {
  /** Completed launch jobs kept (newest), and for how long (s). 0: removed at once. */
  keepCompleted: number;
  keepCompletedSeconds: number;
  /** Failed launch jobs kept (newest), and for how long (s). */
  keepFailed: number;
  keepFailedSeconds: number;
  /** Approximate length of each queue's event stream. */
  eventsMaxLen: number;
}

export const DEFAULT_QUEUE_RETENTION: QueueRetention = {
  keepCompleted: 1_000,
  keepCompletedSeconds: 3600,
  keepFailed: 10_000,
  keepFailedSeconds: 7 * 24 * 3600,
  eventsMaxLen: 1_000,
};

export interface LaunchRequest {
  pid: string;
  attempt: number;
  pool: string;
}

/**
 * Puts launches on the pool's BullMQ queues: `{launch-<pool>}`, or with `shards` > 1 the tree's
 * shard `{launch-<pool>@<k>}` (k from the root pid by the kernel's hash, `launchQueueOf`), each
 * queue a Redis Cluster slot of its own. The job id is derived from pid and attempt, so a second
 * enqueue of the same launch (a retried request, the reaper) is a no-op while the job exists;
 * when it no longer does, the kernel's claim refuses a second run anyway.
 */
export class Launcher {
  private readonly queues = new Map<string, Queue<LaunchJob>>();
  /** Pre-issue-12 queues (`{libos}` prefix), looked into for jobs enqueued before the upgrade. */
  private readonly legacy = new Map<string, Queue<LaunchJob>>();
  private readonly knownPools = new Set<string>();

  constructor(
    private readonly connection: RedisClient,
    private readonly metrics?: Metrics,
    private readonly retention: QueueRetention = DEFAULT_QUEUE_RETENTION,
    /** LIBOS_LAUNCH_SHARDS: the queues a pool is spread over; the workers' setting must match. */
    readonly shards = 1,
  ) {}

  private named(name: string): Queue<LaunchJob> {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue<LaunchJob>(name, {
        connection: this.connection,
        prefix: QUEUE_PREFIX,
        streams: { events: { maxLen: this.retention.eventsMaxLen } },
      });
      this.queues.set(name, queue);
    }
    return queue;
  }

  /** The queue a process's launches go to (its tree's shard). */
  queueOf(pool: string, pid: string): Queue<LaunchJob> {
    this.knownPools.add(pool);
    return this.named(launchQueueOf(pool, pid, this.shards));
  }

  /** Every queue of a pool (its shards), for the board and the metrics. */
  queuesOf(pool: string): Queue<LaunchJob>[] {
    this.knownPools.add(pool);
    return launchQueueNames(pool, this.shards).map((name) => this.named(name));
  }

  /** The pools this coordinator has enqueued to or been told of. */
  pools(): string[] {
    return [...this.knownPools];
  }

  private legacyQueue(pool: string): Queue<LaunchJob> {
    let queue = this.legacy.get(pool);
    if (!queue) {
      queue = new Queue<LaunchJob>(legacyLaunchQueueName(pool), {
        connection: this.connection,
        prefix: LEGACY_QUEUE_PREFIX,
      });
      this.legacy.set(pool, queue);
    }
    return queue;
  }

  /** A launch's job: in its shard's queue, else in the pre-upgrade queue (still drained by workers). */
  async findJob(launch: LaunchRequest): Promise<Job<LaunchJob> | undefined> {
    const id = launchJobId(launch.pid, launch.attempt);
    return (
      (await this.queueOf(launch.pool, launch.pid).getJob(id)) ??
      (await this.legacyQueue(launch.pool).getJob(id))
    );
  }

  private jobOptions(launch: LaunchRequest) {
    return {
      jobId: launchJobId(launch.pid, launch.attempt),
      attempts: 1,
      // BullMQ keeps finished jobs until told not to: bounded by age and count, so its keys
      // do not grow with launches ever made (the kernel's rows, not the jobs, are the record).
      removeOnComplete:
        this.retention.keepCompleted === 0
          ? true
          : { age: this.retention.keepCompletedSeconds, count: this.retention.keepCompleted },
      removeOnFail: { age: this.retention.keepFailedSeconds, count: this.retention.keepFailed },
    };
  }

  private counted(launch: LaunchRequest): void {
    this.metrics?.launches.inc({ pool: launch.pool, attempt: launch.attempt === 1 ? 'first' : 'resumed' });
  }

  async enqueue(launch: LaunchRequest): Promise<void> {
    await this.queueOf(launch.pool, launch.pid).add(
      'launch',
      { pid: launch.pid, attempt: launch.attempt },
      this.jobOptions(launch),
    );
    this.counted(launch);
  }

  /** A batch's launches: one `addBulk` (one round trip) per queue, in order within each queue. */
  async enqueueMany(launches: readonly LaunchRequest[]): Promise<void> {
    const byQueue = new Map<Queue<LaunchJob>, LaunchRequest[]>();
    for (const launch of launches) {
      const queue = this.queueOf(launch.pool, launch.pid);
      const list = byQueue.get(queue) ?? [];
      list.push(launch);
      byQueue.set(queue, list);
    }
    await Promise.all(
      [...byQueue].map(([queue, list]) =>
        queue.addBulk(
          list.map((launch) => ({
            name: 'launch',
            data: { pid: launch.pid, attempt: launch.attempt },
            opts: this.jobOptions(launch),
          })),
        ),
      ),
    );
    for (const launch of launches) this.counted(launch);
  }

  /** Removes a launch that is still waiting (cancel or pause of a queued child). */
  async withdraw(launch: LaunchRequest): Promise<boolean> {
    const job = await this.findJob(launch);
    if (!job) return false;
    try {
      await job.remove();
      return true;
    } catch {
      // Active (locked by a worker): the kernel's claim or completion settles it.
      return false;
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values(), ...this.legacy.values()].map((q) => q.close()));
  }
}
