import type { RedisClient } from '@libos/kernel';
import { type LaunchJob, LEGACY_QUEUE_PREFIX, legacyLaunchQueueName } from '@libos/protocol';
import { Queue, type Worker } from 'bullmq';
import type { Logger } from 'pino';

/** How often a pool's pre-upgrade queue is looked at (one cheap count) while it has no drainer. */
export const LEGACY_CHECK_MS = 30_000;

/**
 * Runs the launches left in the pre-issue-12 queues (`{libos}:launch-<pool>`, all pools in one
 * slot), enqueued by coordinators older than this worker. A pool's old queue gets a BullMQ worker
 * (one more blocking connection) only while it has jobs: looked at on start and every
 * LEGACY_CHECK_MS (old coordinators may still enqueue there during a rolling upgrade), and
 * retired once the queue is drained. So a fleet past the upgrade pays one count per pool per
 * interval, not a connection per pool.
 */
export class LegacyDrain {
  private readonly queues = new Map<string, Queue<LaunchJob>>();
  /** Each pool's drainer taking jobs now. */
  private readonly drainers = new Map<string, Worker>();
  /** Every drainer not yet closed, retiring ones included (shutdown waits for their children). */
  private readonly live = new Set<Worker>();
  private readonly timer: NodeJS.Timeout;
  private checking: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly pools: readonly string[],
    private readonly connection: RedisClient,
    /** Starts a BullMQ worker on a pool's old queue (the same job handler as the new queues). */
    private readonly consume: (pool: string, name: string, prefix: string) => Worker,
    private readonly log: Logger,
    intervalMs: number,
  ) {
    this.timer = setInterval(() => this.schedule(), intervalMs).unref();
  }

  /** Starts, after the first check (so jobs already waiting have their drainer on return). */
  static async start(
    pools: readonly string[],
    connection: RedisClient,
    consume: (pool: string, name: string, prefix: string) => Worker,
    log: Logger,
    intervalMs = LEGACY_CHECK_MS,
  ): Promise<LegacyDrain> {
    const drain = new LegacyDrain(pools, connection, consume, log, intervalMs);
    drain.schedule();
    await drain.checking;
    return drain;
  }

  private queue(pool: string): Queue<LaunchJob> {
    let queue = this.queues.get(pool);
    if (!queue) {
      queue = new Queue<LaunchJob>(legacyLaunchQueueName(pool), {
        connection: this.connection,
        prefix: LEGACY_QUEUE_PREFIX,
      });
      this.queues.set(pool, queue);
    }
    return queue;
  }

  private schedule(): void {
    this.checking = this.checking.then(() => this.check());
  }

  private async check(): Promise<void> {
    for (const pool of this.pools) {
      if (this.closed || this.drainers.has(pool)) continue;
      const waiting = await this.queue(pool)
        .count()
        .catch((error: unknown) => {
          this.log.warn({ pool, err: String(error) }, 'pre-upgrade launch queue not readable');
          return 0;
        });
      if (waiting === 0 || this.closed) continue;
      this.log.info({ pool, waiting }, 'draining launches left in the pre-upgrade queue');
      const worker = this.consume(pool, legacyLaunchQueueName(pool), LEGACY_QUEUE_PREFIX);
      this.drainers.set(pool, worker);
      this.live.add(worker);
      worker.on('drained', () => {
        this.checking = this.checking.then(() => this.retire(pool, worker));
      });
    }
  }

  /** Closes a pool's drainer once its queue has nothing left to hand out (running jobs finish first). */
  private async retire(pool: string, worker: Worker): Promise<void> {
    if (this.drainers.get(pool) !== worker) return;
    if (
      (await this.queue(pool)
        .count()
        .catch(() => 1)) > 0
    )
      return;
    this.drainers.delete(pool);
    this.log.info({ pool }, 'pre-upgrade launch queue drained');
    // Not awaited here: its running children finish on their own time, not the checks'.
    void worker.close().finally(() => this.live.delete(worker));
  }

  /** The drainers not yet closed (closed with the worker's others at shutdown). */
  running(): Worker[] {
    return [...this.live];
  }

  /** Stops looking; the caller closes `running()` with its other BullMQ workers. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await Promise.all([...this.queues.values()].map((queue) => queue.close()));
  }
}
