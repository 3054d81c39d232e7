import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * An AbortSignal that fires when the client goes away before its answer, or the server shuts
 * down, so a long-poll stops holding its wait (it then answers `ready: false` and the client asks
 * again). Only the response's `close` tells a gone client: the request's own `close` fires as soon
 * as its body has been read.
 *
 * Not `AbortSignal.any([signal, shutdown])`: that keeps a WeakRef to each request's signal on the
 * server's long-lived one, and V8's young-generation collector holds a WeakRef's target, so every
 * long-poll's signal, its listeners and what they hold were copied and promoted to the old
 * generation. A listener on `shutdown`, removed when the response closes, holds nothing past it.
 */
export function abortOnClose(
  _request: FastifyRequest,
  reply: FastifyReply,
  shutdown?: AbortSignal,
): AbortSignal {
  const controller = new AbortController();
  const onShutdown = () => controller.abort(shutdown?.reason);
  if (shutdown?.aborted) onShutdown();
  else shutdown?.addEventListener('abort', onShutdown, { once: true });
  reply.raw.once('close', () => {
    shutdown?.removeEventListener('abort', onShutdown);
    if (!reply.raw.writableEnded) controller.abort(new Error('client closed the request'));
  });
  return controller.signal;
}
