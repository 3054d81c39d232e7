import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { KernelError } from '@libos/kernel';
import {
  type ErrorCode,
  errorEnvelope,
  HTTP_STATUS_BY_CODE,
  type Notice,
  type Reason,
} from '@libos/protocol';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';

/** A refusal the HTTP layer makes itself (authentication, unknown routes). */
export class HttpRefusal extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly reason?: Reason,
    readonly extra?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/**
 * Every error leaves as `{error: {code, message, details?}}` with the status of its code. Bad
 * bodies are `invalid_argument` naming each bad path; kernel refusals keep their code and reason.
 * `notices` (a refused tool call's) ride in the envelope as `error.notices`.
 */
export function sendError(
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
  notices?: Notice[],
): FastifyReply {
  if (hasZodFastifySchemaValidationErrors(error)) {
    const issues = error.validation.map((v) => ({
      path: [error.validationContext, ...v.instancePath.split('/').filter(Boolean)].join('.'),
      message: v.message ?? 'invalid',
    }));
    const message = issues.map((i) => `${i.path}: ${i.message}`).join('; ');
    return reply.status(400).send(errorEnvelope('invalid_argument', message, { issues }, notices));
  }
  if (error instanceof KernelError) {
    if (error.code === 'internal' || error.code === 'unavailable')
      request.log.error({ err: error }, 'kernel error');
    return reply
      .status(HTTP_STATUS_BY_CODE[error.code])
      .send(errorEnvelope(error.code, error.message, error.details, notices));
  }
  if (error instanceof HttpRefusal) {
    const details =
      error.reason || error.extra
        ? { ...error.extra, ...(error.reason ? { reason: error.reason } : {}) }
        : undefined;
    return reply
      .status(HTTP_STATUS_BY_CODE[error.code])
      .send(errorEnvelope(error.code, error.message, details, notices));
  }
  const fastifyError = error as Partial<FastifyError>;
  if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return reply
      .status(413)
      .send(errorEnvelope('payload_too_large', fastifyError.message ?? 'body too large', undefined, notices));
  }
  if (typeof fastifyError.statusCode === 'number' && fastifyError.statusCode < 500) {
    return reply
      .status(400)
      .send(
        errorEnvelope(
          'invalid_argument',
          fastifyError.message ?? 'the request is malformed',
          undefined,
          notices,
        ),
      );
  }
  if (isRedisOutage(error)) {
    request.log.error({ err: error }, 'redis unavailable');
    return reply.status(503).send(errorEnvelope('unavailable', 'redis is unavailable'));
  }
  request.log.error({ err: error }, 'unexpected error');
  return reply.status(500).send(errorEnvelope('internal', 'internal error'));
}

/**
 * Router-level refusals (Fastify's `frameworkErrors`): a path parameter longer than the router's
 * `maxParamLength` is 414, a path that does not percent-decode is 400; both `invalid_argument`.
 */
export function sendFrameworkError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH')
    return reply
      .status(414)
      .send(errorEnvelope('invalid_argument', 'a path parameter is longer than the server accepts'));
  if (error.code === 'FST_ERR_BAD_URL')
    return reply
      .status(400)
      .send(errorEnvelope('invalid_argument', 'the path is not valid percent-encoding'));
  return sendError(error, request, reply);
}

/**
 * Errors Node's HTTP parser meets before Fastify sees a request (`clientError`): a header block
 * over the limit is 431, a request that took too long is 408, anything else malformed is 400.
 * The envelope is written on the raw socket, then the socket is closed.
 */
export function writeClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let message = 'the request is not valid HTTP';
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    message = 'the request headers are larger than the server accepts';
  } else if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    message = 'the request took too long to arrive';
  }
  const code: ErrorCode = 'invalid_argument';
  const body = JSON.stringify(errorEnvelope(code, message));
  if (socket.writable)
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  socket.destroy(error);
}

/** A raw Redis connection failure that reached the HTTP layer unwrapped: 503, not 500. */
function isRedisOutage(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return (
    error.name === 'MaxRetriesPerRequestError' ||
    /ECONNREFUSED|ECONNRESET|Connection is closed|max retries|ETIMEDOUT|EPIPE|Stream isn't writeable/i.test(
      error.message,
    )
  );
}
