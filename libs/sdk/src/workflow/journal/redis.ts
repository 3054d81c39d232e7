import type { Redis } from 'ioredis';
import { JournalCorrupted } from '../errors.js';
import { decodeJournalLine, encodeJournalLine } from './codec.js';
import type { JournalEntry } from './entry.js';
import { type Journal, ReplayJournal } from './journal.js';

export interface RedisJournalOptions {
  readonly redis: Redis;
  /** One Redis list per workflow; each element is one journal line (`{"v":1,"e":…}`). */
  readonly key: string;
}

class RedisJournal extends ReplayJournal {
  constructor(
    readonly redis: Redis,
    readonly key: string,
    prior: readonly JournalEntry[],
  ) {
    super(prior);
  }

  protected async store(entry: JournalEntry): Promise<void> {
    // RPUSH is atomic: an entry is in the list whole or not at all, so there is no torn tail.
    await this.redis.rpush(this.key, encodeJournalLine(entry).trimEnd());
  }
}

/**
 * A journal in a Redis list, so a workflow driven from one host can resume on another after a
 * crash. An element that does not decode raises `JournalCorrupted` with its 1-based position.
 */
export async function redisJournal({ redis, key }: RedisJournalOptions): Promise<Journal> {
  const lines = await redis.lrange(key, 0, -1);
  const entries: JournalEntry[] = [];
  for (const [i, raw] of lines.entries()) {
    const text = raw.trim();
    if (text === '') continue;
    try {
      const decoded = decodeJournalLine(text);
      if (decoded !== 'metadata') entries.push(decoded);
    } catch (error) {
      throw new JournalCorrupted(key, i + 1, { cause: error });
    }
  }
  return new RedisJournal(redis, key, entries);
}
