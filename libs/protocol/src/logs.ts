import { z } from 'zod';
import { pidSchema, timestampSchema } from './common.js';

/** A child's output line as the worker stored it. */
export const LOG_STREAMS = ['stdout', 'stderr'] as const;
export type LogStream = (typeof LOG_STREAMS)[number];

/**
 * A cursor into one attempt's log: the id of the last line read (a Redis stream id,
 * `<ms>-<seq>`). `after` reads the lines that follow it.
 */
export const logCursorSchema = z
  .string()
  .regex(/^\d{1,20}-\d{1,20}$/, 'a log cursor is the `next` of a page, e.g. 1733238000000-0');

/** The largest page of lines one read answers. */
export const MAX_LOG_PAGE_LINES = 10_000;

const queryFlag = z
  .enum(['true', 'false', '1', '0'], { error: 'must be true or false' })
  .transform((value) => value === 'true' || value === '1');

/** `GET /v1/admin/processes/{pid}/logs` query. */
export const childLogQuerySchema = z.strictObject({
  /** Which attempt (1, 2, …); default the process's latest. */
  attempt: z.coerce.number().int().min(1).max(1_000_000).optional(),
  /** Stream new lines as server-sent events until the attempt's log ends. */
  follow: queryFlag.default(false),
  /** Only lines after this cursor (a page's `next`). */
  after: logCursorSchema.optional(),
  limit: z.coerce.number().int().min(1).max(MAX_LOG_PAGE_LINES).default(1000),
});
export type ChildLogQuery = z.input<typeof childLogQuerySchema>;

export const childLogLineSchema = z.object({
  attempt: z.number().int(),
  stream: z.enum(LOG_STREAMS),
  /** When the worker read the line's end (its clock). */
  time: timestampSchema,
  /** The text, without its newline; a line over the worker's bound ends with `… [line cut: N more bytes]`. */
  line: z.string(),
});
export type ChildLogLine = z.infer<typeof childLogLineSchema>;

/** One page of an attempt's log (also each server-sent event's data when following). */
export const childLogPageSchema = z.object({
  pid: pidSchema,
  attempt: z.number().int(),
  lines: z.array(childLogLineSchema),
  /** Bytes of the attempt's output dropped so far to keep its log within the bound, oldest first. */
  dropped_bytes: z.number().int(),
  /** The attempt is over and every line it logged was stored: nothing more will come. */
  ended: z.boolean(),
  /** More lines follow `next` already (the page was full). */
  has_more: z.boolean(),
  /** The cursor to read on from (`after`); null while the attempt has logged nothing. */
  next: logCursorSchema.nullable(),
});
export type ChildLogPage = z.infer<typeof childLogPageSchema>;
