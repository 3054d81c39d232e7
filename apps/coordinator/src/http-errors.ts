import { KernelError } from '@libos/kernel';
import { type ErrorCode, errorEnvelope, HTTP_STATUS_BY_CODE, type Reason } from '@libos/protocol';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';

/** A refusal the HTTP layer makes itself (authentication, unknown routes). */
export class HttpRefusal extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly reason?: Reason,
  ) {
    super(message);
  }
}

/**
 * Every error leaves as `{error: {code, message, details?}}` with the status of its code. Bad
 * bodies are `invalid_argument` naming each bad path; kernel refusals keep their code and reason.
 */
export function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (hasZodFastifySchemaValidationErrors(error)) {
    const issues = error.validation.map((v) => ({
      path: [error.validationContext, ...v.instancePath.split('/').filter(Boolean)].join('.'),
      message: v.message ?? 'invalid',
    }));
    const message = issues.map((i) => `${i.path}: ${i.message}`).join('; ');
    return reply.status(400).send(errorEnvelope('invalid_argument', message, { issues }));
  }
  if (error instanceof KernelError) {
    if (error.code === 'internal' || error.code === 'unavailable')
      request.log.error({ err: error }, 'kernel error');
    return reply.status(HTTP_STATUS_BY_CODE[error.code]).send(error.toEnvelope());
  }
  if (error instanceof HttpRefusal) {
    const details = error.reason ? { reason: error.reason } : undefined;
    return reply
      .status(HTTP_STATUS_BY_CODE[error.code])
      .send(errorEnvelope(error.code, error.message, details));
  }
  const fastifyError = error as Partial<FastifyError>;
  if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return reply
      .status(413)
      .send(errorEnvelope('payload_too_large', fastifyError.message ?? 'body too large'));
  }
  if (typeof fastifyError.statusCode === 'number' && fastifyError.statusCode < 500) {
    return reply
      .status(400)
      .send(errorEnvelope('invalid_argument', fastifyError.message ?? 'the request is malformed'));
  }
  request.log.error({ err: error }, 'unexpected error');
  return reply.status(500).send(errorEnvelope('internal', 'internal error'));
}
