import type { RedisClient } from '@libos/kernel';
import {
  type LaunchJob,
  LEGACY_QUEUE_PREFIX,
  launchQueueName,
  launchQueueNames,
  legacyLaunchQueueName,
  MAX_LAUNCH_SHARDS,
  QUEUE_PREFIX,
} from '@libos/protocol';
import { Queue, type Worker } from 'bullmq';
import type { Logger } from 'pino';

/** How often the queues this worker does not consume are looked at (one cheap count each). */
export const STRAY_CHECK_MS = 30_000;

/** A launch queue by its BullMQ prefix and name. */
interface QueueRef {
  pool: string;
  prefix: string;
  name: string;
  /** `<prefix>:<name>`: the queue's identity. */
  key: string;
  /** Why launches may sit there: the pre-upgrade queue, or another shard count's. */
  kind: 'pre-upgrade' | 'other-shards';
}

/**
 * Runs launches left where this worker's own queues do not reach, so none waits forever:
 * - the pre-upgrade queues (`{libos}:launch-<pool>`, all pools in one slot), filled by
 *   coordinators older than the sharded queues (a rolling upgrade);
 * - a pool's queues under another `LIBOS_LAUNCH_SHARDS` than this worker's (`{launch-<pool>}` and
 *   `{launch-<pool>@<k>}`), filled by coordinators configured differently: drained, and said as a
 *   warning, since the setting must be the same on every part.
 * Each is looked at on start and every STRAY_CHECK_MS, and gets a BullMQ worker (one more blocking
 * connection) only while it has jobs, retired once drained. So a well-configured fleet pays one
 * count per such queue per interval, not a connection per queue.
 */
export class StrayDrain {
  private readonly queues = new Map<string, Queue<LaunchJob>>();
  /** The drainer taking jobs now, by pool (one at a time). */
  private readonly drainers = new Map<string, Worker>();
  /** Every drainer not yet closed, retiring ones included (shutdown waits for their children). */
  private readonly live = new Set<Worker>();
  private readonly strays: QueueRef[];
  private readonly timer: NodeJS.Timeout;
  private checking: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(
    pools: readonly string[],
    private readonly shards: number,
    private readonly connection: RedisClient,
    /** Starts a BullMQ worker on a queue (the same job handler as the worker's own queues). */
    private readonly consume: (pool: string, name: string, prefix: string) => Worker,
    private readonly log: Logger,
    intervalMs: number,
  ) {
    this.strays = pools.flatMap((pool) => strayQueues(pool, shards));
    this.timer = setInterval(() => this.schedule(), intervalMs).unref();
  }

  /** Starts, after the first check (so jobs already waiting have their drainer on return). */
  static async start(
    pools: readonly string[],
    shards: number,
    connection: RedisClient,
    consume: (pool: string, name: string, prefix: string) => Worker,
    log: Logger,
    intervalMs = STRAY_CHECK_MS,
  ): Promise<StrayDrain> {
    const drain = new StrayDrain(pools, shards, connection, consume, log, intervalMs);
    drain.schedule();
    await drain.checking;
    return drain;
  }

  private queue(ref: QueueRef): Queue<LaunchJob> {
    let queue = this.queues.get(ref.key);
    if (!queue) {
      queue = new Queue<LaunchJob>(ref.name, { connection: this.connection, prefix: ref.prefix });
      // The shared connection's errors are the worker's to log (once per reconnect); a Queue
      // without a listener prints each one whole to stderr, hundreds a second while Redis is away.
      queue.on('error', () => undefined);
      this.queues.set(ref.key, queue);
    }
    return queue;
  }

  private schedule(): void {
    this.checking = this.checking.then(() => this.check());
  }

  private async check(): Promise<void> {
    // One drainer per pool at a time: a worker never runs more than one queue's concurrency
    // beyond its own, however many stray queues hold launches; the next is found once it retires.
    const busy = new Set([...this.drainers.keys()]);
    const idle = this.strays.filter((ref) => !busy.has(ref.pool));
    const counts = await Promise.all(
      idle.map((ref) =>
        this.queue(ref)
          .count()
          .catch((error: unknown) => {
            this.log.warn(
              { pool: ref.pool, queue: ref.name, err: String(error) },
              'launch queue not readable',
            );
            return 0;
          }),
      ),
    );
    for (const [i, ref] of idle.entries()) {
      const waiting = counts[i] ?? 0;
      if (waiting === 0 || this.closed || this.drainers.has(ref.pool)) continue;
      if (ref.kind === 'pre-upgrade') {
        this.log.info({ pool: ref.pool, waiting }, 'draining launches left in the pre-upgrade queue');
      } else {
        this.log.warn(
          { pool: ref.pool, queue: ref.name, waiting, launch_shards: this.shards },
          'launches wait in a queue of another LIBOS_LAUNCH_SHARDS than this worker’s: draining it; give every coordinator and worker the same LIBOS_LAUNCH_SHARDS',
        );
      }
      const worker = this.consume(ref.pool, ref.name, ref.prefix);
      this.drainers.set(ref.pool, worker);
      this.live.add(worker);
      worker.on('drained', () => {
        this.checking = this.checking.then(() => this.retire(ref, worker));
      });
    }
  }

  /** Closes a pool's drainer once its queue has nothing left to hand out (running jobs finish first). */
  private async retire(ref: QueueRef, worker: Worker): Promise<void> {
    if (this.drainers.get(ref.pool) !== worker) return;
    if (
      (await this.queue(ref)
        .count()
        .catch(() => 1)) > 0
    )
      return;
    this.drainers.delete(ref.pool);
    this.log.info({ pool: ref.pool, queue: ref.name }, 'stray launch queue drained');
    // Not awaited here: its running children finish on their own time, not the checks'.
    void worker.close().finally(() => this.live.delete(worker));
    // Another of the pool's stray queues may be waiting its turn.
    this.schedule();
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

/** A pool's queues this worker does not consume: the pre-upgrade one, and every other shard count's. */
export function strayQueues(pool: string, shards: number): QueueRef[] {
  const own = new Set(launchQueueNames(pool, shards));
  const other = new Set([
    launchQueueName(pool),
    ...Array.from({ length: MAX_LAUNCH_SHARDS }, (_, k) => launchQueueName(pool, k, MAX_LAUNCH_SHARDS)),
  ]);
  return [
    queueRef(pool, LEGACY_QUEUE_PREFIX, legacyLaunchQueueName(pool), 'pre-upgrade'),
    ...[...other]
      .filter((name) => !own.has(name))
      .map((name) => queueRef(pool, QUEUE_PREFIX, name, 'other-shards')),
  ];
}

function queueRef(pool: string, prefix: string, name: string, kind: QueueRef['kind']): QueueRef {
  return { pool, prefix, name, key: `${prefix}:${name}`, kind };
}
