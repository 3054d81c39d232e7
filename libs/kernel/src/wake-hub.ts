import type { Cluster, Redis } from 'ioredis';
import type { RedisClient } from './redis-client.js';

/** What woke a listener: a publish on its channel, or a reconnect after which it must re-check. */
export type WakeEvent = { type: 'message'; message: string } | { type: 'reconnect' };
export type WakeListener = (event: WakeEvent) => void;

/**
 * What a waiter listens to: a sharded channel per tree and kind (exits, mail, control) and the
 * pid within it. Publishes on the channel read `<key> <payload>`.
 */
export interface WakeTopic {
  readonly channel: string;
  readonly key: string;
}

interface ChannelState {
  readonly listeners: Map<string, Set<WakeListener>>;
  ready: Promise<void>;
  /** Pending SUNSUBSCRIBE once the channel has had no listener for `lingerMs`. */
  idle: NodeJS.Timeout | undefined;
}

/**
 * A connection for SSUBSCRIBE with the client's own address and credentials. On one server: a
 * duplicate without a ready check (a subscription made before the connection is ready would make
 * ioredis refuse its own INFO, "Connection in subscriber mode"). On a Redis Cluster: a duplicate
 * with sharded subscribers, one connection per master, each channel subscribed on the master of
 * its slot (a tree's channels share its hash tag, so they live with its keys and the scripts'
 * SPUBLISH stays in that shard).
 */
function subscriberOf(redis: RedisClient): RedisClient {
  if (redis.isCluster) {
    const cluster = redis as Cluster;
    return cluster.duplicate([], {
      shardedSubscribers: true,
      enableReadyCheck: false,
      redisOptions: { ...cluster.options.redisOptions, enableReadyCheck: false },
    });
  }
  return (redis as Redis).duplicate({ enableReadyCheck: false });
}

/**
 * One subscriber connection for many waiters. Channels are per tree (sharded subscriptions, on
 * the tree's slot), so a parent waiting on a hundred children, or a worker running them, holds
 * one subscription, not a hundred; they linger a while after their last listener leaves. Messages
 * are fanned out in-process by key. After a reconnect the hub re-subscribes, then tells every
 * listener to re-check, since publishes during the outage are gone.
 */
export class WakeHub {
  /** Called with the delay from a terminal transition to its wake arriving here (ms). */
  onExitWake: ((latencyMs: number) => void) | undefined;
  private readonly sub: RedisClient;
  private readonly channels = new Map<string, ChannelState>();
  private connectedOnce = false;
  private closed = false;

  constructor(
    redis: RedisClient,
    /** How long a channel stays subscribed without listeners, so the tree's next waiter pays no round trip. */
    private readonly lingerMs: number,
  ) {
    this.sub = subscriberOf(redis);
    this.sub.on('smessage', (channel: string, data: string) => {
      const space = data.indexOf(' ');
      if (space < 0) return;
      const listeners = this.channels.get(channel)?.listeners.get(data.slice(0, space));
      if (!listeners) return; // another pid of the tree, with no waiter here
      const message = data.slice(space + 1);
      // Exit wakes read `<pid> <status> <ms since the epoch at the transition>`.
      const at = /^(?:exited|failed|killed) (\d+)$/.exec(message)?.[1];
      if (at !== undefined) this.onExitWake?.(Math.max(0, Date.now() - Number(at)));
      for (const listener of listeners) listener({ type: 'message', message });
    });
    if (this.sub.isCluster) {
      // The sharded subscribers re-subscribe by themselves after a node is replaced or the slots
      // move, then say `subscribersReady`: listeners re-check, since publishes meanwhile are gone.
      this.sub.on('subscribersReady', () => {
        if (!this.connectedOnce) {
          this.connectedOnce = true;
          return;
        }
        this.recheckAll();
      });
    } else {
      this.sub.on('ready', () => {
        if (!this.connectedOnce) {
          this.connectedOnce = true;
          return;
        }
        void this.resubscribeAll();
      });
    }
    // Errors surface through the commands that fail; keep the emitter from throwing.
    this.sub.on('error', () => {});
  }

  private async resubscribeAll(): Promise<void> {
    const names = [...this.channels.keys()];
    await Promise.all(names.map((name) => this.sub.ssubscribe(name).catch(() => undefined)));
    this.recheckAll(names);
  }

  private recheckAll(names = [...this.channels.keys()]): void {
    for (const name of names) {
      for (const listeners of this.channels.get(name)?.listeners.values() ?? []) {
        for (const listener of listeners) listener({ type: 'reconnect' });
      }
    }
  }

  /**
   * Add `listener` to `topic`; resolves once the channel's subscription is active (at once when
   * it already is), so a publish after that cannot be missed. Returns the release.
   */
  async listen(topic: WakeTopic, listener: WakeListener): Promise<() => void> {
    if (this.closed) throw new Error('the wake hub is closed');
    const { channel, key } = topic;
    const state = this.channels.get(channel) ?? this.subscribe(channel);
    clearTimeout(state.idle);
    state.idle = undefined;
    let listeners = state.listeners.get(key);
    if (!listeners) {
      listeners = new Set();
      state.listeners.set(key, listeners);
    }
    listeners.add(listener);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      listeners.delete(listener);
      if (listeners.size === 0 && state.listeners.get(key) === listeners) state.listeners.delete(key);
      if (state.listeners.size === 0 && this.channels.get(channel) === state && !this.closed) {
        clearTimeout(state.idle);
        state.idle = setTimeout(() => this.unsubscribe(channel, state), this.lingerMs);
        state.idle.unref();
      }
    };
    try {
      await state.ready;
    } catch (error) {
      release();
      throw error;
    }
    return release;
  }

  private subscribe(channel: string): ChannelState {
    const state: ChannelState = { listeners: new Map(), ready: Promise.resolve(), idle: undefined };
    state.ready = this.sub.ssubscribe(channel).then(
      () => undefined,
      (error: unknown) => {
        if (this.channels.get(channel) === state) this.channels.delete(channel);
        throw error;
      },
    );
    this.channels.set(channel, state);
    return state;
  }

  private unsubscribe(channel: string, state: ChannelState): void {
    if (state.listeners.size > 0 || this.channels.get(channel) !== state) return;
    this.channels.delete(channel);
    // The same connection orders this before any later SSUBSCRIBE of the channel.
    this.sub.sunsubscribe(channel).catch(() => undefined);
  }

  /** Topics with at least one listener (for metrics and tests). */
  get size(): number {
    let topics = 0;
    for (const state of this.channels.values()) topics += state.listeners.size;
    return topics;
  }

  /** Channels subscribed, lingering ones included. */
  get subscriptions(): number {
    return this.channels.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const state of this.channels.values()) clearTimeout(state.idle);
    this.channels.clear();
    this.sub.disconnect();
  }
}

/**
 * A single waiter's view of a subscription: `next()` resolves on the next wake (or at once if
 * one arrived since the last call), on abort, or at the deadline.
 */
export class Wakeup {
  private pending = false;
  private resolve: ((reason: 'wake' | 'timeout' | 'abort') => void) | undefined;

  readonly listener: WakeListener = () => {
    if (this.resolve) {
      const resolve = this.resolve;
      this.resolve = undefined;
      resolve('wake');
    } else {
      this.pending = true;
    }
  };

  next(deadline: number, signal?: AbortSignal): Promise<'wake' | 'timeout' | 'abort'> {
    if (signal?.aborted) return Promise.resolve('abort');
    if (this.pending) {
      this.pending = false;
      return Promise.resolve('wake');
    }
    const wait = Math.max(0, deadline - Date.now());
    if (wait === 0) return Promise.resolve('timeout');
    return new Promise((resolve) => {
      const finish = (reason: 'wake' | 'timeout' | 'abort') => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.resolve = undefined;
        resolve(reason);
      };
      const onAbort = () => finish('abort');
      const timer = setTimeout(() => finish('timeout'), wait);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.resolve = finish;
    });
  }
}
