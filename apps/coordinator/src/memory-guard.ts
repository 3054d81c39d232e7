import { mastersOf, type RedisClient } from '@libos/kernel';
import type { Logger } from 'pino';
import { HttpRefusal } from './http-errors.js';
import type { Metrics } from './metrics.js';

export interface MemoryReading {
  used: number;
  /** 0: Redis has no maxmemory (nothing to guard against but the host). */
  max: number;
}

/** `used_memory` and `maxmemory` from an `INFO memory` reply. */
export function parseMemoryInfo(info: string): MemoryReading {
  const value = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? '0');
  return { used: value('used_memory'), max: value('maxmemory') };
}

/** The reading nearest its maxmemory (the largest `used` where none has a maxmemory). */
function fullest(readings: MemoryReading[]): MemoryReading {
  let worst: MemoryReading = { used: 0, max: 0 };
  const ratio = (r: MemoryReading) => (r.max > 0 ? r.used / r.max : -1);
  for (const reading of readings) {
    if (ratio(reading) > ratio(worst) || (ratio(reading) === ratio(worst) && reading.used > worst.used))
      worst = reading;
  }
  return worst;
}

/**
 * Redis memory as a guarded resource (on a Redis Cluster, every master's; the fullest decides): one `INFO memory` per interval (never per request); while
 * `used_memory` is at or above `highWater` × `maxmemory`, new work is refused with 503
 * `unavailable`/`redis_memory` (`check`), and everything in flight (waits, completions, reads,
 * exits, deletes) goes on, so the sweep and finishing work bring memory down. Redis itself runs
 * with `noeviction`: without the guard a full Redis refuses writes mid-transition instead.
 */
export class MemoryGuard {
  private timer: NodeJS.Timeout | undefined;
  private reading: MemoryReading = { used: 0, max: 0 };
  private refusing = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: { highWater: number; intervalMs: number },
    private readonly log: Logger,
    private readonly metrics?: Metrics,
  ) {}

  async start(): Promise<void> {
    await this.refresh().catch(() => undefined);
    this.timer = setInterval(() => {
      this.refresh().catch(() => undefined);
    }, this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Read Redis memory now (the interval does it; tests and the sweep may too). */
  async refresh(): Promise<MemoryReading> {
    // On a Redis Cluster every master has its own maxmemory: the fullest one decides.
    const readings = await Promise.all(
      mastersOf(this.redis).map(async (node) => parseMemoryInfo(await node.info('memory'))),
    );
    this.reading = fullest(readings);
    const { used, max } = this.reading;
    const over = max > 0 && used >= this.options.highWater * max;
    if (over !== this.refusing) {
      this.log.warn(
        { used_memory: used, maxmemory: max, high_water: this.options.highWater },
        over
          ? 'redis memory above the high-water mark: refusing new work'
          : 'redis memory below the high-water mark again',
      );
    }
    this.refusing = over;
    this.metrics?.redisUsedMemory.set(used);
    this.metrics?.redisMaxMemory.set(max);
    this.metrics?.memoryGuard.set(over ? 1 : 0);
    return this.reading;
  }

  get over(): boolean {
    return this.refusing;
  }

  /** Throws 503 `unavailable`/`redis_memory` while above the mark. */
  check(what: string): void {
    if (!this.refusing) return;
    const { used, max } = this.reading;
    this.metrics?.memoryRefusals.inc();
    throw new HttpRefusal(
      'unavailable',
      `Redis memory is above its high-water mark (${used} of ${max} bytes, mark ${Math.round(this.options.highWater * 100)}%): ${what} refused until finished work is released; retry later`,
      'redis_memory',
      { used_memory: used, maxmemory: max, high_water: this.options.highWater },
    );
  }
}
