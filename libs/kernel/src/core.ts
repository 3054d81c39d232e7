import {
  BUDGET_DIMENSIONS,
  type BudgetRequest,
  type Capability,
  type Launch,
  launchJobId,
  PID_PATTERN,
  rootOf,
} from '@libos/protocol';
import { z } from 'zod';
import { KernelError } from './errors.js';
import { ImageRegistry } from './images.js';
import { IndexWriter } from './index-writer.js';
import { Keys } from './keys.js';
import type { RedisClient } from './redis-client.js';
import type { ReplicationOptions } from './replica-wait.js';
import { Retention } from './retention.js';
import { field, type ProcessRow, toUnits } from './rows.js';
import {
  type NoticesDue,
  READ_ONLY_SCRIPTS,
  type ScriptReply,
  Scripts,
  TERMINATING_SCRIPTS,
  type TreeScript,
} from './scripts.js';
import { WakeHub, type WakeListener, type WakeTopic, Wakeup } from './wake-hub.js';

export interface KernelLimits {
  /** Unacknowledged messages a mailbox holds before sends are refused (`mailbox_full`). */
  mailboxMax: number;
  /**
   * Content bytes a mailbox holds (body and payload): a send that would take its unacknowledged
   * messages past it is refused (`mailbox_full`, `details.bound: 'bytes'`); acknowledged ones
   * are trimmed, oldest first, to make room.
   */
  mailboxMaxBytes: number;
  /**
   * Content bytes all the mailboxes of one tree hold together: a send past it is refused
   * (`mailbox_full`, `details.bound: 'tree_bytes'`) unless the recipient's acknowledged messages
   * make room. A tree spawns children at will, each with a mailbox of `mailboxMaxBytes`.
   */
  treeMailboxBytes: number;
  /** A root's `object_bytes` budget (its tree's objects) when neither the request nor the image sets one. */
  treeObjectBytes: number;
  /** A child's `object_bytes` budget when neither the spawn nor its image sets one (capped by the parent's remaining). */
  processObjectBytes: number;
  /** Acknowledged messages kept per mailbox (oldest trimmed beyond it). */
  ackedRetention: number;
  /** Largest JSON payload (object, message body+payload, spawn input) in bytes. */
  maxPayloadBytes: number;
  /** Long-poll window of a blocking wait or receive before it answers `ready: false`. */
  pollMs: number;
  /** How long a resolved image stays cached in this process. */
  imageCacheMs: number;
  /** How long a tree's wake channel stays subscribed after its last waiter leaves. */
  wakeLingerMs: number;
  /**
   * How long status-index records wait to be written together. Admin listings by status and the
   * metrics may lag the rows by this much; a worker's claim flushes at once (the reaper needs
   * its lease).
   */
  indexBatchMs: number;
  /**
   * Records one index script call writes at most; a bigger batch goes in several calls. Each
   * record is a few commands (about 12–22 µs of Redis on a 2-core VM, `bench/kernel-scripts.ts`):
   * unbounded, a batch of 1,000 records held Redis 22 ms in one call.
   */
  indexBatchMax: number;
  /**
   * On one Redis server (not a Cluster, whose index shards are other slots), a tree script that
   * made at most this many index records writes them itself, in the same call: a claim's lease
   * is in the index when the claim answers, and a trivial child's life costs no index calls
   * (`bench/redis-calls.ts`). More records (a batch spawn, a wide cascade) go to the batches,
   * so no script grows by many. 0: always batched.
   */
  indexInlineMax: number;
  /**
   * How long a terminal process is kept after its end (once nothing can still ask for it) before
   * the retention sweep deletes it; a root may set its tree's own at creation.
   */
  retentionMs: number;
  /** Processes one retention script call deletes at most. */
  gcBatch: number;
  /** Objects and keys one retention script call deletes at most (bounds how long it holds Redis). */
  gcCost: number;
  /** Nodes an admin tree read returns when the query names no `max_nodes`. */
  treeDefaultNodes: number;
  /** The most nodes one admin tree read returns (one script: it bounds the script's time). */
  treeMaxNodes: number;
  /** Goals in a tree read are cut to this many bytes. */
  goalPreviewBytes: number;
  /** Candidates one page of a filtered process listing examines at most. */
  listScanMax: number;
  /** Attempts a process row remembers (worker, claimed and ended times, how it ended). */
  attemptHistory: number;
  /** Children one `spawn_children` call creates at most (one script: it bounds the script's time). */
  spawnBatchMax: number;
  /** Children one `wait_children` call names at most. */
  waitChildrenMax: number;
  /**
   * Children one script call ends at most when their parent ends (and theirs, in a deep tree):
   * a wider cascade goes on in further calls (`terminate_more`), so none holds Redis long.
   */
  terminateBatch: number;
}

export const DEFAULT_LIMITS: KernelLimits = {
  mailboxMax: 10_000,
  mailboxMaxBytes: 64 * 1024 * 1024,
  treeMailboxBytes: 256 * 1024 * 1024,
  treeObjectBytes: 1024 * 1024 * 1024,
  processObjectBytes: 64 * 1024 * 1024,
  ackedRetention: 10_000,
  maxPayloadBytes: 1_048_576,
  pollMs: 25_000,
  imageCacheMs: 1_000,
  wakeLingerMs: 10_000,
  indexBatchMs: 20,
  indexBatchMax: 128,
  indexInlineMax: 16,
  retentionMs: 7 * 24 * 3600 * 1000,
  gcBatch: 100,
  gcCost: 500,
  treeDefaultNodes: 2_000,
  treeMaxNodes: 10_000,
  goalPreviewBytes: 256,
  listScanMax: 5_000,
  attemptHistory: 20,
  spawnBatchMax: 256,
  waitChildrenMax: 1_024,
  terminateBatch: 50,
};

/**
 * A `terminateBatch` setting (the coordinator's and the worker's LIBOS_TERMINATE_BATCH): 1 to
 * 100,000 children per script call, default 200.
 */
export const terminateBatchSchema = z.coerce
  .number()
  .int()
  .min(1)
  .max(100_000)
  .default(DEFAULT_LIMITS.terminateBatch);

export interface KernelOptions {
  /** An ioredis client without a `keyPrefix` of its own. The kernel never closes it. */
  redis: RedisClient;
  /** Prefix of every key and channel (default `libos:`). */
  keyPrefix?: string;
  limits?: Partial<KernelLimits>;
  /**
   * Called (and awaited) for every launch the kernel records: spawn, fork, a launched root, a
   * resume that starts a new attempt. The coordinator enqueues the BullMQ job here.
   */
  onLaunch?: (launch: Launch) => void | Promise<void>;
  /**
   * Called (and awaited) with the launches of one `spawn_children` call, in order; the
   * coordinator enqueues them in one round trip. Omitted: `onLaunch` is called for each.
   */
  onLaunches?: (launches: Launch[]) => void | Promise<void>;
  /** Background failures (index batches, retention marks, a cascade left to the retention sweep). */
  onError?: (error: unknown) => void;
  /**
   * Replicas that must confirm (`WAIT`) each state change before it is answered (from
   * LIBOS_REDIS_MIN_REPLICAS / LIBOS_REDIS_REPLICA_TIMEOUT_MS); unset or 0: no WAIT.
   */
  replication?: ReplicationOptions;
}

/** Who makes a call. Every tool call names its caller and is checked against it. */
export interface Caller {
  readonly pid: string;
  /**
   * Set when the caller proved itself with its process token (the coordinator's callers): every
   * script then checks the token against the row in the same step as the call (a token dies at
   * the terminal transition), and reports the notices due to the caller as the call began.
   */
  readonly proof?: CallerProof;
}

export interface CallerProof {
  /** sha256 (hex) of the token's secret: what the row keeps. */
  readonly tokenHash: string;
  /** Notices due to the caller as its last script call began. */
  noticesDue: NoticesDue;
}

/**
 * Which wakes of a blocking call over several topics are worth a re-check. Without a gate every
 * one is. A wait for all of a set re-checks once each member has published (or on a reconnect),
 * not on every member's exit: two script calls over n children instead of n.
 */
export interface WakeGate<T> {
  /** After each check: what it found (what earlier wakes said is now known). */
  checked(value: T): void;
  /** A publish on `topics[index]`: whether to re-check now. */
  admits(index: number): boolean;
}

/** For blocking calls: stop early on `signal`, or answer `ready: false` after `pollMs`. */
export interface CallOptions {
  signal?: AbortSignal;
  pollMs?: number;
}

/** What the kernel's parts share: the client, keys, scripts, indexes, images, the wake hub. */
export class KernelCore {
  readonly keys: Keys;
  readonly scripts: Scripts;
  readonly index: IndexWriter;
  readonly images: ImageRegistry;
  readonly limits: KernelLimits;
  readonly retention: Retention;
  private hubInstance: WakeHub | undefined;
  /** Tree scripts write their own index records (one server; see `indexInlineMax`). */
  private readonly indexInline: boolean;

  constructor(
    readonly redis: RedisClient,
    private readonly options: KernelOptions,
  ) {
    this.keys = new Keys(options.keyPrefix ?? 'libos:');
    this.scripts = new Scripts(redis, options.replication);
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.index = new IndexWriter(
      this.scripts,
      this.keys,
      options.onError ?? (() => {}),
      this.limits.indexBatchMs,
      this.limits.indexBatchMax,
    );
    this.indexInline = !redis.isCluster && this.limits.indexInlineMax > 0;
    this.images = new ImageRegistry(redis, this.keys, this.limits.imageCacheMs);
    this.retention = new Retention(this, options.onError ?? (() => {}));
  }

  get hub(): WakeHub {
    if (!this.hubInstance) this.hubInstance = new WakeHub(this.redis, this.limits.wakeLingerMs);
    return this.hubInstance;
  }

  async close(): Promise<void> {
    await this.index.drain();
    await this.retention.drain();
    await this.hubInstance?.close();
    this.hubInstance = undefined;
  }

  /**
   * One script call on the tree of `pidOrRoot`; its transitions go to the status index. A
   * `caller` with a proof has its token checked by the script and learns its notices due. When
   * the script left a cascade of terminal transitions unfinished (a parent with more children
   * than `terminateBatch`), it is finished here, batch by batch, before the call is answered.
   */
  async run(name: TreeScript, pidOrRoot: string, args: object, caller?: Caller): Promise<ScriptReply> {
    const root = rootOf(pidOrRoot);
    const proof = caller?.proof;
    const sent = proof ? { ...args, th: proof.tokenHash } : args;
    const reply = await this.once(name, root, sent);
    if (proof && reply.noticesDue) proof.noticesDue = reply.noticesDue;
    if (reply.cascadePending) await this.finishCascade(root);
    return reply;
  }

  private async once(name: TreeScript, root: string, args: object): Promise<ScriptReply> {
    const bounded = TERMINATING_SCRIPTS.has(name) ? { ...args, tb: this.limits.terminateBatch } : args;
    // Read-only scripts (auth, on every tool call) make no records: nothing to name for them.
    const sent =
      this.indexInline && !READ_ONLY_SCRIPTS.has(name)
        ? { ...bounded, ix: this.keys.index(this.keys.indexShardOf(root)), ixm: this.limits.indexInlineMax }
        : bounded;
    const reply = await this.scripts.tree(name, this.keys.seq(root), this.keys.tree(root), sent);
    this.index.push(reply.index);
    if (reply.gc) this.retention.mark(root, reply.gc);
    return reply;
  }

  /**
   * Continue a tree's cascade (lua/lib_terminal.lua) one bounded call at a time until its queue
   * is empty, so the caller of an exit or a signal sees its children ended, each waiter woken by
   * its own publish, while no one call holds Redis for more than a batch. The tree's mark for the
   * sweep is written first: if this coordinator dies or Redis fails meanwhile, the sweep finishes
   * the cascade, and the change the caller asked for stands (a failure here is only reported).
   */
  private async finishCascade(root: string): Promise<void> {
    try {
      await this.retention.drain();
      let pending = true;
      while (pending) pending = (await this.once('terminate_more', root, {})).cascadePending === true;
    } catch (error) {
      this.options.onError?.(error);
    }
  }

  /** Hand a recorded launch to the coordinator. */
  async launch(row: ProcessRow): Promise<Launch> {
    const launch = launchOf(row);
    const { pid, attempt } = launch;
    if (this.options.onLaunch) {
      try {
        await this.options.onLaunch(launch);
      } catch (error) {
        throw new KernelError(
          'unavailable',
          `${pid} was recorded as runnable but its launch could not be enqueued: ${String(error)}`,
          { pid, attempt },
        );
      }
    }
    return launch;
  }

  /** Hand the launches of a batch to the coordinator at once (`onLaunches`, else one by one). */
  async launchMany(rows: ProcessRow[]): Promise<Launch[]> {
    const { onLaunches } = this.options;
    if (!onLaunches) {
      const launches: Launch[] = [];
      for (const row of rows) launches.push(await this.launch(row));
      return launches;
    }
    const launches = rows.map(launchOf);
    try {
      await onLaunches(launches);
    } catch (error) {
      const pids = launches.map((launch) => launch.pid);
      throw new KernelError(
        'unavailable',
        `${pids.join(', ')} were recorded as runnable but their launches could not be enqueued: ${String(error)}`,
        { pids },
      );
    }
    return launches;
  }

  /**
   * A blocking call. Listen first (the tree's channel is usually subscribed already, so this
   * costs no round trip), then check-and-register: a publish after the check cannot be missed.
   * Re-check on every wake the `gate` admits (every wake without one) until ready, the long-poll
   * window ends or the caller aborts; a window that ends with wakes held back is checked once
   * more, so the answer is current. A reconnect of the subscriber always triggers a re-check.
   */
  async blocking<T>(
    topic: WakeTopic | readonly WakeTopic[],
    check: (recheck: boolean) => Promise<T>,
    ready: (value: T) => boolean,
    options: CallOptions = {},
    gate?: WakeGate<T>,
  ): Promise<T> {
    const deadline = Date.now() + (options.pollMs ?? this.limits.pollMs);
    const wake = new Wakeup();
    let held = false;
    const listenerOf = (index: number): WakeListener =>
      gate
        ? (event) => {
            if (event.type === 'reconnect' || gate.admits(index)) wake.listener(event);
            else held = true;
          }
        : wake.listener;
    // A wait over a set listens to each of its topics (one channel per tree: no extra round trip).
    const topics = Array.isArray(topic) ? topic : [topic as WakeTopic];
    const releases: (() => void)[] = [];
    const release = () => {
      for (const one of releases) one();
    };
    try {
      for (const [index, one] of topics.entries())
        releases.push(await this.hub.listen(one, listenerOf(index)));
    } catch (error) {
      release();
      throw error;
    }
    const checked = async (recheck: boolean) => {
      held = false;
      const value = await check(recheck);
      gate?.checked(value);
      return value;
    };
    try {
      let last = await checked(false);
      for (;;) {
        if (ready(last) || options.signal?.aborted) return last;
        const why = await wake.next(deadline, options.signal);
        if (why === 'timeout' && held) {
          try {
            return await checked(true);
          } catch (error) {
            // Redis may be away: answer with what the last check knew, as the window is over.
            if (error instanceof KernelError && error.code === 'unavailable') return last;
            throw error;
          }
        }
        if (why !== 'wake') return last;
        try {
          last = await checked(true);
        } catch (error) {
          // Redis may be coming back: keep the wait unless the window is over.
          if (!(error instanceof KernelError && error.code === 'unavailable')) throw error;
          await new Promise((resolve) => setTimeout(resolve, 100));
          wake.listener({ type: 'reconnect' });
        }
      }
    } finally {
      release();
    }
  }

  /** A JSON value as the string a script stores, size-checked. */
  json(value: unknown, what: string): string {
    const text = JSON.stringify(value ?? null);
    if (Buffer.byteLength(text) > this.limits.maxPayloadBytes) {
      throw new KernelError('payload_too_large', `${what} exceeds ${this.limits.maxPayloadBytes} bytes`, {
        reason: 'payload',
        limit: this.limits.maxPayloadBytes,
      });
    }
    return text;
  }
}

function launchOf(row: ProcessRow): Launch {
  const pid = field(row, 'pid');
  const attempt = Number(field(row, 'attempt'));
  return {
    pid,
    root_pid: rootOf(pid),
    attempt,
    job_id: launchJobId(pid, attempt),
    pool: field(row, 'pool') || 'default',
  };
}

export function checkCaller(caller: Caller): string {
  if (!caller || typeof caller.pid !== 'string' || !PID_PATTERN.test(caller.pid)) {
    throw new KernelError('invalid_argument', 'the caller must name a pid');
  }
  return caller.pid;
}

/** Another tree's pid or id cannot name anything the caller may touch. */
export function sameTree(callerPid: string, id: string): void {
  if (rootOf(id) !== rootOf(callerPid)) throw new KernelError('not_found', `no such process or object ${id}`);
}

export function budgetUnits(budget: BudgetRequest | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  if (!budget) return out;
  for (const dimension of BUDGET_DIMENSIONS) {
    const value = budget[dimension];
    if (value !== undefined) out[dimension] = toUnits(dimension, value);
  }
  return out;
}

export function storedCapability(cap: Capability): Record<string, unknown> {
  const expires = cap.expires_at === undefined ? undefined : Date.parse(cap.expires_at);
  if (expires !== undefined && Number.isNaN(expires)) {
    throw new KernelError('invalid_argument', `expires_at of ${cap.resource} is not a timestamp`);
  }
  return {
    resource: cap.resource,
    rights: cap.rights,
    constraints: cap.constraints ?? {},
    delegable: cap.delegable ?? false,
    ...(expires === undefined ? {} : { expires_at: expires }),
  };
}
