import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * An AbortSignal that fires when the client goes away before its answer, or the server shuts
 * down, so a long-poll stops holding its wait (it then answers `ready: false` and the client asks
 * again). Only the response's `close` tells a gone client: the request's own `close` fires as soon
 * as its body has been read.
 */
export function abortOnClose(
  _request: FastifyRequest,
  reply: FastifyReply,
  shutdown?: AbortSignal,
): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableEnded) controller.abort(new Error('client closed the request'));
  });
  return shutdown ? AbortSignal.any([controller.signal, shutdown]) : controller.signal;
}
