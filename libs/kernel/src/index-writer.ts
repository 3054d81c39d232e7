import type { Keys } from './keys.js';
import type { IndexRecord, Scripts } from './scripts.js';

/** What one index shard is yet to learn. */
interface ShardBatch {
  records: IndexRecord[];
  /** Worker completions by outcome type. */
  counts: Map<string, number>;
}

/**
 * Keeps the global status and lease indexes (admin listing, metrics, the reaper) in step with
 * the rows. Records from many operations are batched: one script call per index shard touched
 * per `batchMs` (or sooner, on `drain()`), so an operation costs one round trip and the index a
 * fraction of one; a tree's records all go to its root's shard, so the shards spread the load
 * over slots. Records carry state_generation, so a late batch cannot regress the index. The
 * index is derived: `Kernel.admin.repairIndex` rebuilds it.
 */
export class IndexWriter {
  private batches = new Map<number, ShardBatch>();
  private timer: NodeJS.Timeout | undefined;
  private inflight = new Set<Promise<void>>();
  failures = 0;

  constructor(
    private readonly scripts: Scripts,
    private readonly keys: Keys,
    private readonly onError: (error: unknown) => void,
    private readonly batchMs: number,
    /** Records one script call writes at most, so no call holds Redis long. */
    private readonly batchMax: number,
  ) {}

  push(records: readonly IndexRecord[]): void {
    if (records.length === 0) return;
    for (const record of records) this.batchOf(record[0]).records.push(record);
    this.schedule();
  }

  /** Count one worker completion of `outcome` type (for metrics) in `pid`'s shard, with the next batch. */
  count(pid: string, outcome: string): void {
    const counts = this.batchOf(pid).counts;
    counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
    this.schedule();
  }

  private batchOf(pid: string): ShardBatch {
    const shard = this.keys.indexShardOf(pid);
    let batch = this.batches.get(shard);
    if (!batch) {
      batch = { records: [], counts: new Map() };
      this.batches.set(shard, batch);
    }
    return batch;
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), this.batchMs).unref();
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batches = this.batches;
    this.batches = new Map();
    for (const [shard, batch] of batches) {
      // In calls of at most batchMax records, sent together (one connection keeps their order);
      // the counts go with the first. Records carry their generation, so their order is not needed.
      for (let start = 0; start === 0 || start < batch.records.length; start += this.batchMax) {
        const counts = start === 0 ? Object.fromEntries(batch.counts) : {};
        this.write(shard, batch.records.slice(start, start + this.batchMax), counts);
      }
    }
  }

  private write(shard: number, records: IndexRecord[], counts: Record<string, number>): void {
    const done = this.scripts
      .index(this.keys.indexGen(shard), this.keys.index(shard), records, counts)
      .catch((error: unknown) => {
        this.failures += 1;
        this.onError(error);
      })
      .finally(() => this.inflight.delete(done));
    this.inflight.add(done);
  }

  /** Resolves when every record pushed so far has been written (or has failed). */
  async drain(): Promise<void> {
    if (this.batches.size > 0) this.flush();
    while (this.inflight.size > 0) await Promise.all([...this.inflight]);
  }
}
