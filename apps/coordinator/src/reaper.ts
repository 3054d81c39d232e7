import {
  type Kernel,
  REAPER_HOLD_MAX_MS,
  type ReaperShards,
  type Recovery,
  type StaleLaunch,
} from '@libos/kernel';
import type { LaunchJob } from '@libos/protocol';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import { atMost, STOP_WAIT_MS } from './at-most.js';
import type { Launcher } from './launcher.js';

export interface ReaperOptions {
  intervalMs: number;
  /** A runnable process older than this whose job is gone is enqueued again. */
  relaunchAfterMs: number;
  /**
   * Runnable rows one sweep reads for lost launches, with their jobs (default 500). A pass over
   * them starts once per `relaunchAfterMs` and reads one page a sweep.
   */
  relaunchPage?: number;
  /**
   * How often the derived status and lease indexes are rebuilt from the rows (by one coordinator
   * of the fleet): a worker that died between its claim and its index write would otherwise hide
   * an expired lease from the sweep.
   */
  repairEveryMs?: number;
  /**
   * How long this reaper's hold on its index shards lasts without a sweep renewing it (default 3
   * sweeps, at most REAPER_HOLD_MAX_MS): when it dies, the others take its shards within this
   * plus one sweep.
   */
  holdMs?: number;
}

/** What one sweep did. */
export interface ReapReport {
  /** The index shards this reaper held (the others' belong to other coordinators). */
  shards: number[];
  recovered: Recovery[];
  /** Launches enqueued again. */
  relaunched: string[];
}

/**
 * The coordinator's sweep: expired leases become `paused`/`stale_execution` (or `killed` when a
 * kill was pending) through the kernel, and runnable processes whose launch never reached the
 * queue (a coordinator that died between recording and enqueueing) are enqueued again. The
 * coordinators share it: each sweeps only the index shards it holds (its fair share, see
 * `ReaperShards`). Both halves are idempotent, so a shard changing hands mid-sweep is harmless.
 */
export class Reaper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopping = false;
  private lastRepair = Date.now();
  private lastRelaunch = 0;
  /** The relaunch pass under way: where its next page starts. */
  private relaunchPass: { cursor: string | undefined } | undefined;
  private readonly shards: ReaperShards;

  constructor(
    private readonly kernel: Kernel,
    private readonly launcher: Launcher,
    private readonly log: Logger,
    private readonly options: ReaperOptions,
  ) {
    this.shards = kernel.reaperShards(options.holdMs ?? Math.min(3 * options.intervalMs, REAPER_HOLD_MAX_MS));
  }

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.sweep()
        .catch((error: unknown) => {
          // A sweep cut short by the coordinator's own stop is not news.
          if (!this.stopping) this.log.warn({ err: error }, 'reaper sweep failed');
        })
        .finally(() => {
          this.running = undefined;
        });
    }, this.options.intervalMs);
    this.timer.unref();
  }

  /**
   * Stop sweeping and let go of the shards, so the other coordinators take them at once; each
   * step waits at most `STOP_WAIT_MS`.
   */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.stopping = true;
    await atMost(this.running, STOP_WAIT_MS);
    await atMost(
      this.shards.release().catch((error: unknown) => this.log.warn({ err: error }, 'reaper release failed')),
      STOP_WAIT_MS,
    );
  }

  async sweep(): Promise<ReapReport> {
    const repairEveryMs = this.options.repairEveryMs ?? 60_000;
    if (Date.now() - this.lastRepair >= repairEveryMs) {
      this.lastRepair = Date.now();
      if (await this.shards.repairTurn(repairEveryMs)) await this.kernel.admin.repairIndex();
    }
    const shards = await this.shards.claim();
    const report: ReapReport = { shards, recovered: [], relaunched: [] };
    if (shards.length === 0) return report;
    report.recovered = await this.kernel.worker.reapExpired(100, shards);
    for (const recovery of report.recovered) {
      this.log.warn({ pid: recovery.pid, status: recovery.status }, 'lease expired');
    }
    // A pass reads every runnable row old enough (a few fields each) and its job: one per window,
    // one page a sweep, so a sweep's work stays bounded however long the queue (a whole pass each
    // window made a long queue's drain cost its length squared). The cursor is one order over
    // every shard, so a pass goes on when the shards held change: a newly held shard's rows newer
    // than the cursor are read by the next pass.
    if (!this.relaunchPass && Date.now() - this.lastRelaunch >= this.options.relaunchAfterMs) {
      this.lastRelaunch = Date.now();
      this.relaunchPass = { cursor: undefined };
    }
    if (this.relaunchPass) {
      const page = await this.relaunchLost(shards, this.relaunchPass.cursor);
      report.relaunched = page.relaunched;
      this.relaunchPass = page.next === undefined ? undefined : { cursor: page.next };
    }
    return report;
  }

  /** One page of a relaunch pass: its lost launches enqueued again, and where the next page starts. */
  private async relaunchLost(
    shards: number[],
    cursor: string | undefined,
  ): Promise<{ relaunched: string[]; next: string | undefined }> {
    const cutoff = Date.now() - this.options.relaunchAfterMs;
    const relaunched: string[] = [];
    const page = await this.kernel.admin.staleLaunches(
      cutoff,
      cursor,
      this.options.relaunchPage ?? 500,
      shards,
    );
    // The page's jobs are looked up together (one pipelined round trip, not one per launch):
    // a long queue has every launch in it older than the window.
    const gone = await Promise.all(page.launches.map((launch) => this.jobGone(launch)));
    for (const [index, launch] of page.launches.entries()) {
      const job = gone[index];
      if (job === false) continue;
      // The page was read before the jobs: a launch claimed and ended meanwhile has a finished
      // (or trimmed) job too. Read again after the job, a row still runnable is really lost.
      // (One gone, deleted after its retention period, or unreadable now is left to a later sweep.)
      const row = await this.kernel.admin.getProcess(launch.pid).catch(() => undefined);
      if (row?.status !== 'runnable' || row.attempt !== launch.attempt) continue;
      // A finished job's id, still taken, would block the same id being enqueued again.
      if (job !== undefined) {
        // One job that will not go must not stop the sweep of the rows after it.
        const removed = await job.remove().then(
          () => true,
          (error: unknown) =>
            this.log.warn({ pid: launch.pid, err: error }, 'finished launch job not removed'),
        );
        if (!removed) continue;
      }
      // The kernel hands the launch to onLaunch, which enqueues it under the same job id.
      await this.kernel.admin.launchOf(launch.pid).then(
        () => {
          relaunched.push(launch.pid);
          this.log.warn(
            { pid: launch.pid, attempt: launch.attempt },
            'runnable without a live job: enqueued again',
          );
        },
        (error: unknown) => this.log.warn({ pid: launch.pid, err: error }, 'relaunch refused'),
      );
    }
    return { relaunched, next: page.next_cursor ?? undefined };
  }

  /**
   * Whether a runnable process's launch job is gone: `false` while it is on its way (waiting,
   * delayed or active), the job when it finished (a worker failed it before its claim, e.g.
   * through a failover), `undefined` when there is none (a coordinator that died between
   * recording the launch and enqueueing it). BullMQ sets `finishedOn` exactly while a job is
   * completed or failed (a retry clears it), so the job's hash says it: `Job.getState` would scan
   * the queue's whole wait and active lists for each launch, O(queue²) a sweep of a long queue.
   */
  private async jobGone(launch: StaleLaunch): Promise<Job<LaunchJob> | undefined | false> {
    const job = await this.launcher.findJob(launch);
    if (!job) return undefined;
    return job.finishedOn === undefined ? false : job;
  }
}
