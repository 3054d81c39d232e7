import type { RedisClient } from '@libos/kernel';
import { type LaunchJob, launchJobId, launchQueueName, QUEUE_PREFIX } from '@libos/protocol';
import { Queue } from 'bullmq';
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
 * Puts launches on the pool's BullMQ queue. The job id is derived from pid and attempt, so a
 * second enqueue of the same launch (a retried request, the reaper) is a no-op while the job
 * exists; when it no longer does, the kernel's claim refuses a second run anyway.
 */
export class Launcher {
  private readonly queues = new Map<string, Queue<LaunchJob>>();

  constructor(
    private readonly connection: RedisClient,
    private readonly metrics?: Metrics,
    private readonly retention: QueueRetention = DEFAULT_QUEUE_RETENTION,
  ) {}

  queue(pool: string): Queue<LaunchJob> {
    let queue = this.queues.get(pool);
    if (!queue) {
      queue = new Queue<LaunchJob>(launchQueueName(pool), {
        connection: this.connection,
        prefix: QUEUE_PREFIX,
        streams: { events: { maxLen: this.retention.eventsMaxLen } },
      });
      this.queues.set(pool, queue);
    }
    return queue;
  }

  knownQueues(): Queue<LaunchJob>[] {
    return [...this.queues.values()];
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
    await this.queue(launch.pool).add(
      'launch',
      { pid: launch.pid, attempt: launch.attempt },
      this.jobOptions(launch),
    );
    this.counted(launch);
  }

  /** A batch's launches: one `addBulk` (one round trip) per pool, in order within each pool. */
  async enqueueMany(launches: readonly LaunchRequest[]): Promise<void> {
    const byPool = new Map<string, LaunchRequest[]>();
    for (const launch of launches) {
      const list = byPool.get(launch.pool) ?? [];
      list.push(launch);
      byPool.set(launch.pool, list);
    }
    await Promise.all(
      [...byPool].map(([pool, list]) =>
        this.queue(pool).addBulk(
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
    const job = await this.queue(launch.pool).getJob(launchJobId(launch.pid, launch.attempt));
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
    await Promise.all(this.knownQueues().map((q) => q.close()));
  }
}
