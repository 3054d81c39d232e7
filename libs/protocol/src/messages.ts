import { z } from 'zod';
import { jsonValueSchema, labelSchema, messageIdSchema, pidSchema, timestampSchema } from './common.js';

export const MESSAGE_KINDS = ['normal', 'interrupt'] as const;
export const messageKindSchema = z.enum(MESSAGE_KINDS);

/** Who a message goes to: `self`, `parent`, or a direct child's pid. */
export const addresseeSchema = z.union([z.literal('self'), z.literal('parent'), pidSchema]);

const text = z.string().min(1).max(256);

/** Mailbox filters; every given filter must match (ANDed). */
export const messageFilterShape = {
  kind: messageKindSchema.optional(),
  sender: addresseeSchema.optional(),
  channel: text.optional(),
  correlation_id: text.optional(),
  reply_to: messageIdSchema.optional(),
  message_ids: z.array(messageIdSchema).max(1000).optional(),
};
export const messageFilterSchema = z.strictObject(messageFilterShape);
export type MessageFilter = z.infer<typeof messageFilterSchema>;

export const sendArgsSchema = z.strictObject({
  to: addresseeSchema,
  kind: messageKindSchema.default('normal'),
  channel: text.optional(),
  correlation_id: text.optional(),
  reply_to: messageIdSchema.optional(),
  body: z.string().max(1_048_576).optional(),
  payload: jsonValueSchema.optional(),
  /** Extra labels for this message; the sender's own labels are always added. */
  labels: z.array(labelSchema).max(32).optional(),
});
export const sendResultSchema = z.object({ message_id: messageIdSchema, created_at: timestampSchema });

export const readArgsSchema = z.strictObject({
  ...messageFilterShape,
  include_acked: z.boolean().default(false),
  ack: z.boolean().default(true),
  limit: z.number().int().min(0).max(1000).default(20),
});
export const receiveArgsSchema = readArgsSchema.extend({ block: z.boolean().default(true) });

export const messageViewSchema = z.object({
  message_id: messageIdSchema,
  sender: pidSchema,
  recipient: pidSchema,
  kind: messageKindSchema,
  channel: z.string().nullable(),
  correlation_id: z.string().nullable(),
  reply_to: z.string().nullable(),
  body: z.string().nullable(),
  payload: jsonValueSchema.nullable(),
  labels: z.array(z.string()),
  created_at: timestampSchema,
  acked: z.boolean(),
  acked_at: timestampSchema.nullable(),
});
export type MessageView = z.infer<typeof messageViewSchema>;

/** There is no cursor: a continuation only says whether repeating the same filters advances. */
export const continuationSchema = z.object({
  reuse_filters: z.literal(true),
  advances: z.boolean(),
  note: z.string(),
});

export const readResultSchema = z.object({
  messages: z.array(messageViewSchema),
  acked_message_ids: z.array(messageIdSchema),
  has_more: z.boolean(),
  omitted_count: z.number().int().min(0),
  continuation: continuationSchema.nullable(),
});
export const receiveResultSchema = readResultSchema.extend({ ready: z.boolean() });

/**
 * Notices the coordinator attaches to tool responses. Interrupt notices come before the
 * recipient's next non-message tool call, normal ones after a tool call. Both carry ids only:
 * the content is read through the mailbox tools.
 */
export const NOTICE_PHASES = ['before', 'after'] as const;
export const noticePhaseSchema = z.enum(NOTICE_PHASES);
export const noticeSchema = z.object({
  kind: messageKindSchema,
  message_ids: z.array(messageIdSchema).min(1),
  text: z.string(),
});
export type Notice = z.infer<typeof noticeSchema>;
export const pendingNoticesSchema = z.object({
  interrupt: z.array(messageIdSchema),
  normal: z.array(messageIdSchema),
});
export type PendingNotices = z.infer<typeof pendingNoticesSchema>;

export function noticeFor(kind: 'normal' | 'interrupt', ids: string[]): Notice | undefined {
  if (ids.length === 0) return undefined;
  const text =
    kind === 'interrupt'
      ? `${ids.length} interrupt message(s) arrived: read them with read_process_messages before continuing.`
      : `${ids.length} new message(s) arrived: read them with read_process_messages.`;
  return { kind, message_ids: ids, text };
}
