import { z } from 'zod';
import { type Notice, noticeSchema } from './messages.js';

/** The error codes of the public surface and the HTTP status each maps to. */
export const HTTP_STATUS_BY_CODE = {
  invalid_argument: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  failed_precondition: 409,
  payload_too_large: 413,
  resource_exhausted: 429,
  unavailable: 503,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof HTTP_STATUS_BY_CODE;
export const ERROR_CODES = Object.keys(HTTP_STATUS_BY_CODE) as [ErrorCode, ...ErrorCode[]];
export const errorCodeSchema = z.enum(ERROR_CODES);

/** `details.reason`: why a request was refused, finer than the code. */
export const REASONS = [
  // addressing and authority
  'not_direct_child',
  'not_delegable',
  'not_held',
  'missing_capability',
  'no_handle',
  'rights',
  'restricted',
  'no_parent',
  'invalid_token',
  'terminal_caller',
  'paused_caller',
  // data flow and limits
  'data_flow',
  'budget',
  'mailbox_full',
  'payload',
  'redis_memory',
  // a state change not confirmed by LIBOS_REDIS_MIN_REPLICAS replicas in time (it may still be kept)
  'replication',
  // state
  'already_merged',
  'terminal',
  'not_terminal',
  'not_paused',
  'already_paused',
  'host_gate',
  'kill_pending',
  'superseded',
  'not_runnable',
  'released',
  'deleted',
  'version_conflict',
  // input
  'no_image',
  'unknown_image',
  'path',
  'blocking_receive',
  'no_attempt',
  // batches (spawn_children, wait_children)
  'batch_too_large',
  'duplicate_pid',
] as const;
export const reasonSchema = z.enum(REASONS);
export type Reason = z.infer<typeof reasonSchema>;

export const errorDetailsSchema = z.looseObject({ reason: reasonSchema.optional() });
export type ErrorDetails = z.infer<typeof errorDetailsSchema>;

/**
 * The body of every 4xx/5xx answer: `{error: {code, message, details?, notices?}}`. `notices`
 * only on a refused tool call: the mailbox notices due to the caller, as a successful answer
 * carries them at its top level, so a refusal delays no interrupt.
 */
export const errorEnvelopeSchema = z.object({
  error: z.object({
    code: errorCodeSchema,
    message: z.string(),
    details: errorDetailsSchema.optional(),
    notices: z.array(noticeSchema).optional(),
  }),
});
export type ErrorEnvelope = z.infer<typeof errorEnvelopeSchema>;

export function errorEnvelope(
  code: ErrorCode,
  message: string,
  details?: ErrorDetails,
  notices?: Notice[],
): ErrorEnvelope {
  return {
    error: {
      code,
      message,
      ...(details ? { details } : {}),
      ...(notices && notices.length > 0 ? { notices } : {}),
    },
  };
}
