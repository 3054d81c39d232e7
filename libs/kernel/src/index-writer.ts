import type { Keys } from './keys.js';
import type { IndexRecord, Scripts } from './scripts.js';

/**
 * Keeps the global status and lease indexes (admin listing, metrics, the reaper) in step with
 * the rows. Records from many operations are batched into one script call per `batchMs` (or
 * sooner, on `drain()`), so an operation costs one round trip and the index a fraction of one;
 * records carry state_generation, so a late batch cannot regress the index. The index is
 * derived: `Kernel.admin.repairIndex` rebuilds it.
 */
export class IndexWriter {
  private queue: IndexRecord[] = [];
  private counts = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private inflight = new Set<Promise<void>>();
  failures = 0;

  constructor(
    private readonly scripts: Scripts,
    private readonly keys: Keys,
    private readonly onError: (error: unknown) => void,
    private readonly batchMs: number,
  ) {}

  push(records: readonly IndexRecord[]): void {
    if (records.length === 0) return;
    for (const record of records) this.queue.push(record);
    this.schedule();
  }

  /** Count one worker completion of `outcome` type (for metrics), with the next batch. */
  count(outcome: string): void {
    this.counts.set(outcome, (this.counts.get(outcome) ?? 0) + 1);
    this.schedule();
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), this.batchMs).unref();
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.queue.length === 0 && this.counts.size === 0) return;
    const batch = this.queue;
    const counts = Object.fromEntries(this.counts);
    this.queue = [];
    this.counts = new Map();
    const done = this.scripts
      .index(this.keys.indexGen, this.keys.index, batch, counts)
      .catch((error: unknown) => {
        this.failures += 1;
        this.onError(error);
      })
      .finally(() => this.inflight.delete(done));
    this.inflight.add(done);
  }

  /** Resolves when every record pushed so far has been written (or has failed). */
  async drain(): Promise<void> {
    if (this.queue.length > 0 || this.counts.size > 0) this.flush();
    while (this.inflight.size > 0) await Promise.all([...this.inflight]);
  }
}
