import type { Kernel } from '@libos/kernel';
import { launchJobId } from '@libos/protocol';
import type { Logger } from 'pino';
import type { Launcher } from './launcher.js';

export interface ReaperOptions {
  intervalMs: number;
  /** A runnable process older than this whose job is gone is enqueued again. */
  relaunchAfterMs: number;
  /**
   * How often the derived status and lease indexes are rebuilt from the rows: a worker that died
   * between its claim and its index write would otherwise hide an expired lease from the sweep.
   */
  repairEveryMs?: number;
}

/**
 * The coordinator's sweep: expired leases become `paused`/`stale_execution` (or `killed` when a
 * kill was pending) through the kernel, and runnable processes whose launch never reached the
 * queue (a coordinator that died between recording and enqueueing) are enqueued again. Every
 * coordinator may run it: both halves are idempotent.
 */
export class Reaper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private lastRepair = Date.now();
  private lastRelaunch = 0;

  constructor(
    private readonly kernel: Kernel,
    private readonly launcher: Launcher,
    private readonly log: Logger,
    private readonly options: ReaperOptions,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.sweep()
        .catch((error: unknown) => this.log.warn({ err: error }, 'reaper sweep failed'))
        .finally(() => {
          this.running = undefined;
        });
    }, this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  async sweep(): Promise<void> {
    if (Date.now() - this.lastRepair >= (this.options.repairEveryMs ?? 60_000)) {
      this.lastRepair = Date.now();
      await this.kernel.admin.repairIndex();
    }
    for (const recovery of await this.kernel.worker.reapExpired()) {
      this.log.warn({ pid: recovery.pid, status: recovery.status }, 'lease expired');
    }
    // It reads every runnable row (a few fields each) and old ones' jobs: once per window is enough.
    if (Date.now() - this.lastRelaunch >= this.options.relaunchAfterMs) {
      this.lastRelaunch = Date.now();
      await this.relaunchLost();
    }
  }

  private async relaunchLost(): Promise<void> {
    const cutoff = Date.now() - this.options.relaunchAfterMs;
    let cursor: string | undefined;
    do {
      const page = await this.kernel.admin.staleLaunches(cutoff, cursor);
      for (const { pid, attempt, pool } of page.launches) {
        if (await this.launcher.queue(pool).getJob(launchJobId(pid, attempt))) continue;
        this.log.warn({ pid, attempt }, 'runnable without a job: enqueued again');
        // The kernel hands the launch to onLaunch, which enqueues it under the same job id.
        await this.kernel.admin.launchOf(pid).catch((error: unknown) => {
          this.log.warn({ pid, err: error }, 'relaunch refused');
        });
      }
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }
}
