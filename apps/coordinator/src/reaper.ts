import { type Kernel, REAPER_HOLD_MAX_MS, type ReaperShards, type Recovery } from '@libos/kernel';
import type { Logger } from 'pino';
import { atMost, STOP_WAIT_MS } from './at-most.js';
import type { Launcher } from './launcher.js';

export interface ReaperOptions {
  intervalMs: number;
  /** A runnable process older than this whose job is gone is enqueued again. */
  relaunchAfterMs: number;
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
    // It reads every runnable row (a few fields each) and old ones' jobs: once per window is enough.
    if (Date.now() - this.lastRelaunch >= this.options.relaunchAfterMs) {
      this.lastRelaunch = Date.now();
      report.relaunched = await this.relaunchLost(shards);
    }
    return report;
  }

  private async relaunchLost(shards: number[]): Promise<string[]> {
    const cutoff = Date.now() - this.options.relaunchAfterMs;
    const relaunched: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.kernel.admin.staleLaunches(cutoff, cursor, 500, shards);
      for (const { pid, attempt, pool } of page.launches) {
        const job = await this.launcher.findJob({ pid, attempt, pool });
        if (job) {
          // Waiting, delayed or active: still on its way. Finished while the row stayed runnable
          // (a worker failed it before its claim, e.g. through a failover): that launch is lost,
          // and its job id, still taken, would block the same id being enqueued again.
          const state = await job.getState();
          if (state !== 'completed' && state !== 'failed') continue;
          // One job that will not go must not stop the sweep of the rows after it.
          const removed = await job.remove().then(
            () => true,
            (error: unknown) => this.log.warn({ pid, err: error }, 'finished launch job not removed'),
          );
          if (!removed) continue;
        }
        this.log.warn({ pid, attempt }, 'runnable without a live job: enqueued again');
        // The kernel hands the launch to onLaunch, which enqueues it under the same job id.
        await this.kernel.admin.launchOf(pid).then(
          () => relaunched.push(pid),
          (error: unknown) => this.log.warn({ pid, err: error }, 'relaunch refused'),
        );
      }
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    return relaunched;
  }
}
