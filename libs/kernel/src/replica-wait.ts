import type { Redis } from 'ioredis';
import { KernelError } from './errors.js';
import type { RedisClient } from './redis-client.js';

/** How many replicas must hold a state change before it is acknowledged, and for how long to wait. */
export interface ReplicationOptions {
  /** `WAIT`'s numreplicas; 0 turns confirmation off. */
  readonly replicas: number;
  /** `WAIT`'s timeout in ms; past it the caller gets 503 `unavailable`/`replication`. */
  readonly timeoutMs: number;
}

interface PendingWait {
  /** The connection closes counted when the WAIT was sent. */
  readonly closes: number;
  /** Set once Redis answered it (or the command failed). */
  answered: boolean;
  readonly acked: Promise<number>;
}

/**
 * Group commit for `WAIT`. Redis answers a connection's commands in the order it got them, and a
 * WAIT covers every write its connection sent before it. So when a write's reply has arrived and
 * a WAIT sent on the same connection has not been answered yet, that WAIT came after the write
 * and covers it: `confirm` joins it; else it sends one (after the reply, so it follows the write).
 * The writes of a burst share one WAIT. (A script ioredis had to resend as
 * EVAL after NOSCRIPT, as on a new primary, replies after a WAIT sent meanwhile: that WAIT is
 * answered by then and is not joined.)
 *
 * A WAIT answered on another connection than the write's (the client reconnected in between, e.g.
 * to a new primary after a failover) would count replicas of writes it never saw: a close between
 * the write's reply and the WAIT's answer leaves the write unconfirmed.
 */
export class ReplicaWait {
  private closes = 0;
  private latest: PendingWait | undefined;
  private readonly redis: Redis;

  constructor(
    client: RedisClient,
    readonly options: ReplicationOptions,
  ) {
    // WAIT answers for the one node it is sent to; a Cluster's writes go to many (the settings
    // refuse LIBOS_REDIS_MIN_REPLICAS with LIBOS_REDIS_CLUSTER_NODES).
    if (client.isCluster)
      throw new TypeError('replica confirmation (WAIT) is not supported on a Redis Cluster');
    const redis = client as Redis;
    this.redis = redis;
    redis.on('close', () => {
      this.closes += 1;
    });
  }

  /**
   * Call as soon as a write's reply arrived: resolves once `replicas` replicas acknowledged every
   * write of this connection up to it; else throws `unavailable` with reason `replication`.
   */
  async confirm(what: string): Promise<void> {
    const { replicas, timeoutMs } = this.options;
    const closesAtReply = this.closes;
    let wait = this.latest;
    if (!wait || wait.answered || wait.closes !== closesAtReply) {
      const pending: PendingWait = {
        closes: closesAtReply,
        answered: false,
        acked: this.redis.wait(replicas, timeoutMs),
      };
      const answered = () => {
        pending.answered = true;
      };
      pending.acked.then(answered, answered);
      this.latest = pending;
      wait = pending;
    }
    let acked: number;
    try {
      acked = await wait.acked;
    } catch (error) {
      throw new KernelError(
        'unavailable',
        `${what} was sent to Redis but its replication could not be confirmed (${error instanceof Error ? error.message : String(error)}): it may or may not be kept`,
        { reason: 'replication', required: replicas, confirmed: 0 },
      );
    }
    if (this.closes !== closesAtReply) {
      throw new KernelError(
        'unavailable',
        `${what} was sent to Redis but the connection was lost before ${replicas} replica(s) confirmed it: it may or may not be kept`,
        { reason: 'replication', required: replicas, confirmed: 0 },
      );
    }
    if (acked < replicas) {
      throw new KernelError(
        'unavailable',
        `${what} was written on the Redis primary but only ${acked} of the ${replicas} replica(s) LIBOS_REDIS_MIN_REPLICAS asks for confirmed it within ${timeoutMs} ms: it may or may not survive a failover`,
        { reason: 'replication', required: replicas, confirmed: acked },
      );
    }
  }
}
