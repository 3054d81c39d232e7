import { z } from 'zod';
import { budgetViewSchema } from './budget.js';
import { imageNameSchema, messageIdSchema, oidSchema, pidSchema, timestampSchema } from './common.js';
import { addresseeSchema, messageKindSchema, messageViewSchema } from './messages.js';
import { outcomeTypeSchema, pendingSignalSchema, processStatusSchema, processViewSchema } from './process.js';

/**
 * The operator's reads of one process (`/v1/admin/processes/{pid}/…`): its mailbox, its objects,
 * its subtree and a description. They read only: nothing is acknowledged, consumed or tainted.
 * Query strings carry text, so numbers are coerced and booleans are `true`/`false`.
 */

// Each accepts its parsed form too: the coordinator parses a query, the kernel parses it again.
const booleanText = z.union([z.boolean(), z.enum(['true', 'false']).transform((text) => text === 'true')]);

/** A time bound: an ISO timestamp or milliseconds since the epoch. */
export const timeBoundSchema = z.union([
  z.number().int().min(0),
  z
    .union([z.string().regex(/^\d{1,15}$/), z.iso.datetime({ offset: true })])
    .transform((text) => (/^\d+$/.test(text) ? Number(text) : Date.parse(text))),
]);

/** `GET /v1/admin/processes`: newest first, a cursor stable under inserts. */
export const listProcessesQuerySchema = z.strictObject({
  status: processStatusSchema.optional(),
  /** Only this tree (a root pid; its processes, newest first, the root last). */
  root: pidSchema.optional(),
  /** Only the direct children of this process, newest first. */
  parent: pidSchema.optional(),
  /** Only root processes (`true`). */
  roots: booleanText.optional(),
  image: imageNameSchema.optional(),
  /** Only processes created after this time. */
  created_after: timeBoundSchema.optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z.string().max(200).optional(),
});
export type ListProcessesQuery = z.infer<typeof listProcessesQuerySchema>;
export type ListProcessesInput = z.input<typeof listProcessesQuerySchema>;
export const listProcessesResultSchema = z.object({
  processes: z.array(processViewSchema),
  /**
   * Pass back as `cursor` for the next page; null when there is none. A filtered page may hold
   * fewer than `limit` processes (even none) and still have a next one: each page examines a
   * bounded number of candidates.
   */
  next_cursor: z.string().nullable(),
});
export type ListProcessesResult = z.infer<typeof listProcessesResultSchema>;

/** `GET /v1/admin/processes/{pid}/messages`: the filters of `read_process_messages`, and paging. */
export const adminMessagesQuerySchema = z.strictObject({
  kind: messageKindSchema.optional(),
  sender: addresseeSchema.optional(),
  channel: z.string().min(1).max(256).optional(),
  correlation_id: z.string().min(1).max(256).optional(),
  reply_to: messageIdSchema.optional(),
  /** Comma-separated message ids. */
  message_ids: z
    .union([
      z.array(messageIdSchema).max(1000),
      z
        .string()
        .max(40_000)
        .transform((text) => text.split(',').filter(Boolean))
        .pipe(z.array(messageIdSchema).max(1000)),
    ])
    .optional(),
  /** Omitted: acknowledged and unread alike; `true`: only acknowledged; `false`: only unread. */
  acked: booleanText.optional(),
  /** Only messages after this one (the previous page's `next_cursor`). */
  after: messageIdSchema.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
export type AdminMessagesQuery = z.input<typeof adminMessagesQuerySchema>;
export const adminMessagesResultSchema = z.object({
  pid: pidSchema,
  messages: z.array(messageViewSchema),
  /** Matches after `after` not returned on this page. */
  omitted_count: z.number().int().min(0),
  /** The last returned message id when more match: pass it as `after`. */
  next_cursor: messageIdSchema.nullable(),
  /** The whole mailbox: unread and acknowledged messages held. */
  unacked_count: z.number().int().min(0),
  acked_count: z.number().int().min(0),
  /** Notices not yet delivered to the process (reading here consumes none). */
  pending_notices: z.object({ interrupt: z.number().int().min(0), normal: z.number().int().min(0) }),
});
export type AdminMessagesResult = z.infer<typeof adminMessagesResultSchema>;

/** `GET /v1/admin/processes/{pid}/objects`: owned and held objects, by object number. */
export const adminObjectsQuerySchema = z.strictObject({
  /** Only objects after this one (the previous page's `next_cursor`). */
  after: oidSchema.optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
export type AdminObjectsQuery = z.input<typeof adminObjectsQuerySchema>;
export const adminObjectEntrySchema = z.object({
  oid: oidSchema,
  kind: z.string().nullable(),
  /** Null when the object was released (a handle may outlive it). */
  owner: pidSchema.nullable(),
  owned: z.boolean(),
  /** The process's handle to it: `r`, `rw`, or null (owned without a handle). */
  handle: z.enum(['r', 'rw']).nullable(),
  labels: z.array(z.string()),
  version: z.number().int().nullable(),
  /** The stored JSON payload's size in bytes. */
  size_bytes: z.number().int().min(0),
  created_at: timestampSchema.nullable(),
  updated_at: timestampSchema.nullable(),
});
export type AdminObjectEntry = z.infer<typeof adminObjectEntrySchema>;
export const adminObjectsResultSchema = z.object({
  pid: pidSchema,
  objects: z.array(adminObjectEntrySchema),
  next_cursor: oidSchema.nullable(),
});
export type AdminObjectsResult = z.infer<typeof adminObjectsResultSchema>;

/** `GET /v1/admin/processes/{pid}/tree`. */
export const adminTreeQuerySchema = z.strictObject({
  /** At most this many nodes (breadth-first); the kernel's `treeMaxNodes` caps it. */
  max_nodes: z.coerce.number().int().min(1).max(100_000).optional(),
});
export type AdminTreeQuery = z.input<typeof adminTreeQuerySchema>;
export const treeNodeSchema = z.object({
  pid: pidSchema,
  parent_pid: pidSchema.nullable(),
  /** 0 for the node asked about. */
  depth: z.number().int().min(0),
  status: processStatusSchema,
  image: z.string().nullable(),
  /** Cut to the first `goal_bytes` bytes (`goal_truncated`). */
  goal: z.string(),
  goal_truncated: z.boolean(),
  outcome_type: outcomeTypeSchema.nullable(),
  outcome_reason: z.string().nullable(),
  attempt: z.number().int(),
  pause_reason: z.string().nullable(),
  resume_gate: z.literal('host').nullable(),
  pending_signal: pendingSignalSchema.nullable(),
  waiting_on: z.string().nullable(),
  driver: z.enum(['worker', 'caller']),
  resource_budget: budgetViewSchema,
  created_at: timestampSchema,
  updated_at: timestampSchema,
  ended_at: timestampSchema.nullable(),
  child_count: z.number().int().min(0),
});
export type TreeNode = z.infer<typeof treeNodeSchema>;
export const adminTreeResultSchema = z.object({
  pid: pidSchema,
  /** Breadth-first from `pid`; siblings in spawn order (numeric: `.2` before `.10`). */
  nodes: z.array(treeNodeSchema),
  /** The subtree has more nodes than `max_nodes`; the deepest levels are the ones left out. */
  truncated: z.boolean(),
  max_nodes: z.number().int(),
});
export type AdminTreeResult = z.infer<typeof adminTreeResultSchema>;

/** One attempt of a launched process (the row keeps the last `attemptHistory` of them). */
export const attemptViewSchema = z.object({
  attempt: z.number().int(),
  worker: z.string(),
  /** The worker's claim: the process is `running` from here. */
  claimed_at: timestampSchema,
  ended_at: timestampSchema.nullable(),
  /** The outcome type it ended with, or `stale_execution` (its worker stopped renewing). */
  ended_as: z.string().nullable(),
  reason: z.string().nullable(),
});
export type AttemptView = z.infer<typeof attemptViewSchema>;

/** `GET /v1/admin/processes/{pid}/describe`: everything about one process, for `libos describe`. */
export const describeResultSchema = z.object({
  process: processViewSchema,
  attempts: z.array(attemptViewSchema),
  ended_at: timestampSchema.nullable(),
  children: z.object({ total: z.number().int(), by_status: z.record(z.string(), z.number().int()) }),
  /** The result object's first bytes as JSON text. */
  result: z
    .object({
      oid: oidSchema,
      size_bytes: z.number().int(),
      preview: z.string(),
      truncated: z.boolean(),
    })
    .nullable(),
  mailbox: z.object({
    unacked_count: z.number().int(),
    acked_count: z.number().int(),
    pending_notices: z.object({ interrupt: z.number().int(), normal: z.number().int() }),
    /** The oldest unread messages (at most 5). */
    first_unread: z.array(messageViewSchema),
  }),
});
export type DescribeResult = z.infer<typeof describeResultSchema>;

/** `GET /v1/admin/trees/counts`: the list of roots' counts, one call for a page of roots. */
export const TREE_COUNTS_MAX_ROOTS = 200;
export const treeCountsQuerySchema = z.strictObject({
  /** Comma-separated root pids (at most 200). */
  roots: z
    .union([
      z.array(pidSchema),
      z
        .string()
        .max(20_000)
        .transform((text) => text.split(',').filter(Boolean))
        .pipe(z.array(pidSchema)),
    ])
    .pipe(z.array(pidSchema).min(1).max(TREE_COUNTS_MAX_ROOTS)),
});
export type TreeCountsQuery = z.input<typeof treeCountsQuerySchema>;
export const treeCountsSchema = z.object({
  root: pidSchema,
  /**
   * The root's descendants (every process of the tree but the root) by status, read from
   * counters the tree keeps (no row is read). Null when the tree is gone, or was created before
   * trees kept counts (`counted: false`).
   */
  descendants: z
    .object({
      total: z.number().int().min(0),
      by_status: z.partialRecord(processStatusSchema, z.number().int()),
    })
    .nullable(),
  counted: z.boolean(),
});
export type TreeCounts = z.infer<typeof treeCountsSchema>;
export const treeCountsResultSchema = z.object({ trees: z.array(treeCountsSchema) });
export type TreeCountsResult = z.infer<typeof treeCountsResultSchema>;
