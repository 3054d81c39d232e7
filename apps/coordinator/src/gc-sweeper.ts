import type { ArchiveSink, Kernel, SweepReport } from '@libos/kernel';
import type { Logger } from 'pino';
import { atMost, STOP_WAIT_MS } from './at-most.js';
import type { Metrics } from './metrics.js';

/**
 * The coordinator's retention loop: every `intervalMs` it runs the kernel's sweep, which claims
 * the retention shards it can (one coordinator per shard at a time) and deletes what is due in
 * bounded script calls, archiving first when an archive is configured. `libos gc` and
 * `POST /v1/admin/gc` run the same sweep at once.
 */
export class GcSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SweepReport> | undefined;
  private stopping = false;

  constructor(
    private readonly kernel: Kernel,
    private readonly log: Logger,
    private readonly options: { intervalMs: number; archive?: ArchiveSink; metrics?: Metrics },
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.sweep().catch((error: unknown) => {
        // A sweep cut short by the coordinator's own stop is not news.
        if (!this.stopping) this.log.warn({ err: error }, 'retention sweep failed');
      });
    }, this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops the loop; a sweep in flight is waited for at most `STOP_WAIT_MS`. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.stopping = true;
    await atMost(
      this.running?.catch(() => undefined),
      STOP_WAIT_MS,
    );
  }

  /** One sweep now (joined with one already running). */
  sweep(): Promise<SweepReport> {
    this.running ??= this.kernel.retention
      .sweep({ ...(this.options.archive ? { archive: this.options.archive } : {}) })
      .then((report) => {
        this.options.metrics?.gcDeleted.inc(report.deleted);
        if (report.deleted > 0) this.log.debug(report, 'retention sweep');
        return report;
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  /** An operator's delete of a terminal process and its subtree. */
  async deleteTree(pid: string): Promise<{ deleted: number }> {
    const result = await this.kernel.retention.deleteTree(pid, this.options.archive);
    this.options.metrics?.gcDeleted.inc(result.deleted);
    return result;
  }
}
