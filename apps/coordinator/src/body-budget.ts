import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpRefusal } from './http-errors.js';

export interface BodyBudgetLimits {
  /** Bytes of request bodies held at once, all callers together. */
  total: number;
  /** The same for one process's requests. */
  perProcess: number;
  /** LIBOS_BODY_LIMIT_BYTES: what a body of unknown length (chunked) is counted as. */
  bodyLimit: number;
}

/**
 * The request bodies a coordinator holds at once, in bytes. Fastify reads a body whole (up to
 * LIBOS_BODY_LIMIT_BYTES) before its handler runs, and callers are children, untrusted code: one
 * child with a thousand connections could otherwise make the coordinator hold gigabytes. A body
 * counts from its headers (its declared length; the body limit when chunked) until its answer is
 * sent or its connection closes, so a body declared large and sent slowly holds its share for up
 * to LIBOS_REQUEST_TIMEOUT_MS. A process over its share is refused (429: its own doing); a
 * coordinator over the total refuses with 503 (try again, or another coordinator). One body is
 * always let through, so limits set below the body limit still let every request be made.
 */
export class BodyBudget {
  #held = 0;
  readonly #byProcess = new Map<string, number>();
  /** What each connection holds, released when it closes: one listener per socket, not per request. */
  readonly #bySocket = new WeakMap<Socket, Set<() => void>>();

  constructor(private readonly limits: BodyBudgetLimits) {}

  /** Counts `request`'s body against `pid` and the total, or refuses it; released when its answer ends. */
  take(request: FastifyRequest, reply: FastifyReply, pid: string): void {
    const bytes = declaredBytes(request, this.limits.bodyLimit);
    if (bytes === 0) return;
    const mine = this.#byProcess.get(pid) ?? 0;
    if (mine > 0 && mine + bytes > this.limits.perProcess)
      throw new HttpRefusal(
        'resource_exhausted',
        `this process's requests in flight already carry ${mine} bytes of body; at most ${this.limits.perProcess} (LIBOS_PROCESS_BODY_BYTES_HELD): wait for an answer before sending more`,
      );
    if (this.#held > 0 && this.#held + bytes > this.limits.total)
      throw new HttpRefusal(
        'unavailable',
        `the coordinator holds ${this.#held} bytes of request bodies, at most ${this.limits.total} (LIBOS_BODY_BYTES_HELD): try again`,
      );
    const socket = request.raw.socket;
    if (reply.raw.destroyed || socket.destroyed) return; // gone while its token was checked
    this.#held += bytes;
    this.#byProcess.set(pid, mine + bytes);
    // The answer's end releases it, or the connection's: a pipelined request whose answer waits
    // behind another gets no 'close' of its own when the connection goes.
    let pending = this.#bySocket.get(socket);
    if (!pending) {
      const onClose = new Set<() => void>();
      socket.once('close', () => {
        for (const release of onClose) release();
      });
      this.#bySocket.set(socket, onClose);
      pending = onClose;
    }
    const release = () => {
      if (!pending.delete(release)) return;
      this.#held -= bytes;
      const left = (this.#byProcess.get(pid) ?? bytes) - bytes;
      if (left > 0) this.#byProcess.set(pid, left);
      else this.#byProcess.delete(pid);
    };
    pending.add(release);
    reply.raw.once('close', release);
  }
}

/** The body's size as its headers give it: its content-length, the body limit when chunked, 0 when none. */
function declaredBytes(request: FastifyRequest, bodyLimit: number): number {
  const length = request.headers['content-length'];
  if (length !== undefined) return Math.min(Number(length) || 0, bodyLimit);
  return request.headers['transfer-encoding'] === undefined ? 0 : bodyLimit;
}
