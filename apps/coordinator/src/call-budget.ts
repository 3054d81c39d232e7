import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpRefusal } from './http-errors.js';

export interface CallBudgetLimits {
  /** Tool calls in flight at once, all callers together (LIBOS_CALLS_HELD). */
  calls: number;
  /** The same for one process (LIBOS_PROCESS_CALLS_HELD). */
  processCalls: number;
  /** Bytes of request bodies held at once, all callers together (LIBOS_BODY_BYTES_HELD). */
  bytes: number;
  /** The same for one process's calls (LIBOS_PROCESS_BODY_BYTES_HELD). */
  processBytes: number;
  /** LIBOS_BODY_LIMIT_BYTES: what a body of unknown length (chunked) is counted as. */
  bodyLimit: number;
}

interface Held {
  calls: number;
  bytes: number;
}

/** Which limit refused a call, as the metric labels it. */
export type CallLimit = 'process_calls' | 'process_body_bytes' | 'calls' | 'body_bytes';

/** What the budget tells its owner (metrics). */
export interface CallBudgetEvents {
  refused(limit: CallLimit): void;
  /** The calls held in all, after each change. */
  held(calls: number): void;
}

/**
 * The tool calls a coordinator holds at once: how many, and the bytes of their bodies. Callers are
 * children, untrusted code, and a call costs the coordinator while it is open: a socket (one of
 * its file descriptors, which it shares with Redis and everything else), ~15 KB while a long-poll
 * waits, and the whole body, which Fastify reads (up to LIBOS_BODY_LIMIT_BYTES) before the handler
 * runs. One child opening thousands of connections would otherwise use up the descriptors or the
 * memory of a coordinator every process depends on. A call counts from its headers (a body by its
 * declared length; the body limit when chunked) until its answer is sent or its connection closes,
 * so a body declared large and sent slowly holds its share for up to LIBOS_REQUEST_TIMEOUT_MS. A
 * process over its share is refused (429: its own doing); a coordinator over the total refuses
 * with 503 (try again, or another coordinator). One body is always let through, so byte limits set
 * below the body limit still let every call be made.
 */
export class CallBudget {
  readonly #held: Held = { calls: 0, bytes: 0 };
  readonly #byProcess = new Map<string, Held>();
  /** What each connection holds, released when it closes: one listener per socket, not per request. */
  readonly #bySocket = new WeakMap<Socket, Set<() => void>>();

  constructor(
    private readonly limits: CallBudgetLimits,
    private readonly events?: CallBudgetEvents,
  ) {}

  /** Counts `request` against `pid` and the total, or refuses it; released when its answer ends. */
  take(request: FastifyRequest, reply: FastifyReply, pid: string): void {
    const { limits } = this;
    const bytes = declaredBytes(request, limits.bodyLimit);
    const mine = this.#byProcess.get(pid) ?? { calls: 0, bytes: 0 };
    const all = this.#held;
    const refuse = (limit: CallLimit, message: string) => {
      this.events?.refused(limit);
      return new HttpRefusal(limit.startsWith('process') ? 'resource_exhausted' : 'unavailable', message);
    };
    const wait = 'wait for an answer before sending more';
    if (mine.calls >= limits.processCalls)
      throw refuse(
        'process_calls',
        `this process already has ${mine.calls} calls in flight, at most ${limits.processCalls} (LIBOS_PROCESS_CALLS_HELD): ${wait}`,
      );
    if (bytes > 0 && mine.bytes > 0 && mine.bytes + bytes > limits.processBytes)
      throw refuse(
        'process_body_bytes',
        `this process's calls in flight already carry ${mine.bytes} bytes of body; at most ${limits.processBytes} (LIBOS_PROCESS_BODY_BYTES_HELD): ${wait}`,
      );
    if (all.calls >= limits.calls)
      throw refuse(
        'calls',
        `the coordinator holds ${all.calls} calls in flight, at most ${limits.calls} (LIBOS_CALLS_HELD): try again`,
      );
    if (bytes > 0 && all.bytes > 0 && all.bytes + bytes > limits.bytes)
      throw refuse(
        'body_bytes',
        `the coordinator holds ${all.bytes} bytes of request bodies, at most ${limits.bytes} (LIBOS_BODY_BYTES_HELD): try again`,
      );
    const socket = request.raw.socket;
    if (reply.raw.destroyed || socket.destroyed) return; // gone while its token was checked
    const add = (sign: 1 | -1) => {
      all.calls += sign;
      all.bytes += sign * bytes;
      const held = this.#byProcess.get(pid) ?? { calls: 0, bytes: 0 };
      held.calls += sign;
      held.bytes += sign * bytes;
      if (held.calls > 0) this.#byProcess.set(pid, held);
      else this.#byProcess.delete(pid);
      this.events?.held(all.calls);
    };
    add(1);
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
      if (pending.delete(release)) add(-1);
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
