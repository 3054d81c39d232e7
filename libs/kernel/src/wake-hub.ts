import type { Redis } from 'ioredis';

/** What woke a listener: a publish on its channel, or a reconnect after which it must re-check. */
export type WakeEvent = { type: 'message'; message: string } | { type: 'reconnect' };
export type WakeListener = (event: WakeEvent) => void;

interface ChannelState {
  readonly listeners: Set<WakeListener>;
  ready: Promise<void>;
}

/**
 * One subscriber connection for many waiters: sharded subscriptions (SSUBSCRIBE, so a channel
 * carrying a tree's hash tag lives on that tree's shard), refcounted per channel, fanned out to
 * in-process listeners. After a reconnect the hub re-subscribes, then tells every listener to
 * re-check, since publishes during the outage are gone.
 */
export class WakeHub {
  /** Called with the delay from a terminal transition to its wake arriving here (ms). */
  onExitWake: ((latencyMs: number) => void) | undefined;
  private readonly sub: Redis;
  private readonly channels = new Map<string, ChannelState>();
  private connectedOnce = false;
  private closed = false;

  constructor(redis: Redis) {
    // No ready check: a subscription made before the connection is ready would make ioredis refuse
    // its own INFO ("Connection in subscriber mode").
    this.sub = redis.duplicate({ enableReadyCheck: false });
    this.sub.on('smessage', (channel: string, message: string) => {
      const state = this.channels.get(channel);
      if (!state) return;
      // Exit wakes read `<status> <ms since the epoch at the transition>`.
      const at = /^(?:exited|failed|killed) (\d+)$/.exec(message)?.[1];
      if (at !== undefined) this.onExitWake?.(Math.max(0, Date.now() - Number(at)));
      for (const listener of state.listeners) listener({ type: 'message', message });
    });
    this.sub.on('ready', () => {
      if (!this.connectedOnce) {
        this.connectedOnce = true;
        return;
      }
      void this.resubscribeAll();
    });
    // Errors surface through the commands that fail; keep the emitter from throwing.
    this.sub.on('error', () => {});
  }

  private async resubscribeAll(): Promise<void> {
    const names = [...this.channels.keys()];
    await Promise.all(names.map((name) => this.sub.ssubscribe(name).catch(() => undefined)));
    for (const name of names) {
      const state = this.channels.get(name);
      if (!state) continue;
      for (const listener of state.listeners) listener({ type: 'reconnect' });
    }
  }

  /** Subscribe `listener` to `channel`; resolves once the subscription is active. Returns the release. */
  async listen(channel: string, listener: WakeListener): Promise<() => void> {
    if (this.closed) throw new Error('the wake hub is closed');
    let state = this.channels.get(channel);
    if (!state) {
      const created: ChannelState = { listeners: new Set(), ready: Promise.resolve() };
      created.ready = this.sub.ssubscribe(channel).then(
        () => undefined,
        (error: unknown) => {
          if (this.channels.get(channel) === created) this.channels.delete(channel);
          throw error;
        },
      );
      this.channels.set(channel, created);
      state = created;
    }
    state.listeners.add(listener);
    const current = state;
    try {
      await current.ready;
    } catch (error) {
      current.listeners.delete(listener);
      throw error;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      current.listeners.delete(listener);
      if (current.listeners.size === 0 && this.channels.get(channel) === current) {
        this.channels.delete(channel);
        // The same connection orders this before any later SSUBSCRIBE of the channel.
        if (!this.closed) this.sub.sunsubscribe(channel).catch(() => undefined);
      }
    };
  }

  /** Channels with at least one listener (for metrics and tests). */
  get size(): number {
    return this.channels.size;
  }

  async close(): Promise<void> {
    this.closed = true;
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
