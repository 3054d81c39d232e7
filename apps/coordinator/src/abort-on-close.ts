import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * An AbortSignal that fires when the client goes away or the server shuts down, so a long-poll
 * stops holding its wait (it then answers `ready: false` and the client asks again).
 */
export function abortOnClose(
  request: FastifyRequest,
  reply: FastifyReply,
  shutdown?: AbortSignal,
): AbortSignal {
  const controller = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('client closed the request'));
  };
  request.raw.once('close', onClose);
  reply.raw.once('close', onClose);
  return shutdown ? AbortSignal.any([controller.signal, shutdown]) : controller.signal;
}
