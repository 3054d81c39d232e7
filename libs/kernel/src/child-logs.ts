import {
  type ChildLogLine,
  type ChildLogPage,
  logCursorSchema,
  MAX_LOG_PAGE_LINES,
  pidSchema,
} from '@libos/protocol';
import { z } from 'zod';
import type { KernelCore } from './core.js';
import { parseOrThrow } from './errors.js';
import { iso } from './rows.js';
import { Wakeup } from './wake-hub.js';

/**
 * What a stored line costs against an attempt's bound beyond its bytes (its text and newline):
 * a stream entry's own keeping, so a flood of empty lines is bounded too.
 */
export const LOG_LINE_OVERHEAD = 32;

/** One line as the worker sends it: stream (`o` stdout, `e` stderr), capture time (ms), text. */
export type LogRecord = [stream: 'o' | 'e', timeMs: number, text: string];

export interface LogBatch {
  /** Oldest first. */
  lines: LogRecord[];
  /** Bytes of output the worker dropped since its last batch (its own bound, a failed batch). */
  dropped: number;
  /** The attempt is over: this is its log's last batch. */
  end: boolean;
}

/** A line's bytes as the bound and the dropped count measure them: its UTF-8 text and newline. */
export function logLineBytes(text: string): number {
  return Buffer.byteLength(text) + 1;
}

export interface LogReadOptions {
  /** Default: the process's latest attempt. */
  attempt?: number | undefined;
  /** Only lines after this cursor (a page's `next`). */
  after?: string | undefined;
  limit?: number | undefined;
}

const appendHeadSchema = z.object({ bytes: z.number(), dropped: z.number() });
const readHeadSchema = z.object({
  attempt: z.number(),
  dropped: z.number(),
  ended: z.boolean(),
  more: z.boolean(),
});
const flatLinesSchema = z.preprocess(
  // cjson cannot tell an empty list from an empty object
  (value) => (value !== null && typeof value === 'object' && !Array.isArray(value) ? [] : value),
  z.array(z.string()),
);
const optionsSchema = z.object({
  attempt: z.number().int().min(1).optional(),
  after: logCursorSchema.optional(),
  limit: z.number().int().min(1).max(MAX_LOG_PAGE_LINES).default(1000),
});

/**
 * Children's output, per attempt, in the process's tree slot: the worker appends batches
 * (`log_append`, one script each, which keeps the byte bound and wakes followers on the tree's
 * `lg` channel); operators read pages (`log_read`) or follow a log until it ends through the
 * shared wake hub (no connection and no polling per follower).
 */
export class ChildLogs {
  constructor(private readonly core: KernelCore) {}

  /** Appends one batch of an attempt's lines, keeping at most `maxBytes` (oldest dropped first). */
  async append(pid: string, attempt: number, batch: LogBatch, maxBytes: number): Promise<void> {
    parseOrThrow(pidSchema, pid, 'pid');
    const reply = await this.core.run('log_append', pid, {
      pid,
      attempt,
      lines: batch.lines,
      dropped: batch.dropped,
      max: maxBytes,
      over: LOG_LINE_OVERHEAD,
      fin: batch.end,
    });
    appendHeadSchema.parse(reply.head);
  }

  /** One page of an attempt's log (`not_found` for an unknown pid, `invalid_argument` for a bad attempt). */
  async read(pid: string, options: LogReadOptions = {}): Promise<ChildLogPage> {
    parseOrThrow(pidSchema, pid, 'pid');
    const { attempt, after, limit } = parseOrThrow(optionsSchema, options, 'log read');
    const reply = await this.core.run('log_read', pid, {
      pid,
      attempt: attempt ?? 0,
      after: after ?? '',
      limit,
    });
    const head = readHeadSchema.parse(reply.head);
    const flat = flatLinesSchema.parse(reply.rest[0] ?? []);
    const lines: ChildLogLine[] = [];
    let next = after ?? null;
    for (let i = 0; i + 3 < flat.length; i += 4) {
      next = flat[i] as string;
      lines.push({
        attempt: head.attempt,
        stream: flat[i + 1] === 'e' ? 'stderr' : 'stdout',
        time: iso(Number(flat[i + 2])),
        line: flat[i + 3] as string,
      });
    }
    return {
      pid,
      attempt: head.attempt,
      lines,
      dropped_bytes: head.dropped,
      ended: head.ended && !head.more,
      has_more: head.more,
      next,
    };
  }

  /**
   * Pages of an attempt's log as they come, until it has ended or `signal` aborts: the first page
   * at once (possibly empty), then one per wake with new lines. A follower listens on the tree's
   * log and exit channels through the kernel's one subscriber, re-reads on each wake and once per
   * long-poll window (a stale recovery publishes nothing), and reads the attempt it started on.
   */
  async *follow(pid: string, options: LogReadOptions, signal: AbortSignal): AsyncGenerator<ChildLogPage> {
    parseOrThrow(pidSchema, pid, 'pid');
    const { keys, hub } = { keys: this.core.keys, hub: this.core.hub };
    const wake = new Wakeup();
    const releases = [
      await hub.listen(keys.logTopic(pid), wake.listener),
      await hub.listen(keys.exitTopic(pid), wake.listener),
    ];
    try {
      let page = await this.read(pid, options);
      const attempt = page.attempt;
      yield page;
      while (!page.ended && !signal.aborted) {
        if (!page.has_more) {
          const why = await wake.next(Date.now() + this.core.limits.pollMs, signal);
          if (why === 'abort') return;
        }
        const last = page;
        page = await this.read(pid, {
          ...options,
          attempt: attempt || undefined,
          after: page.next ?? undefined,
        });
        // An empty page says nothing new, unless its news is the end or more dropped bytes.
        if (page.lines.length > 0 || page.ended || page.dropped_bytes !== last.dropped_bytes) yield page;
      }
    } finally {
      for (const release of releases) release();
    }
  }
}
