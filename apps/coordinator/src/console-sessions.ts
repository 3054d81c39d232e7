import { createHash, randomBytes } from 'node:crypto';
import { parse as parseCookies, serialize as serializeCookie } from 'cookie';
import type { FastifyRequest } from 'fastify';

/** The console's session cookie: an opaque random id; the server keeps only its hash. */
export const SESSION_COOKIE = 'libos_session';

/**
 * A cookie-authenticated call that changes state must carry this header (any value): a
 * cross-site form or image cannot set a custom header, so with `SameSite=Strict` it is the
 * console's CSRF guard. Bearer and Basic callers need not send it.
 */
export const CSRF_HEADER = 'x-libos-console';

const hash = (id: string) => createHash('sha256').update(id).digest('base64url');

export interface SessionLimits {
  /** How long a session lives from its login (it does not slide). */
  ttlMs: number;
  /** Sessions kept at once; the oldest is ended first when a login would exceed it. */
  max: number;
}

/**
 * Console sessions, in this coordinator's memory: a login on one coordinator is not known to
 * another, and a restart ends every session (the operator logs in again). Keyed by the sha256 of
 * the cookie's id, so a heap dump holds nothing a browser could present.
 */
export class ConsoleSessions {
  /** hash of the id → when it expires (ms since the epoch); insertion order is login order. */
  private readonly sessions = new Map<string, number>();

  constructor(private readonly limits: SessionLimits) {}

  /** Starts a session; returns the `set-cookie` value carrying its id. */
  start(secure: boolean): string {
    const id = randomBytes(32).toString('base64url');
    this.sweep();
    while (this.sessions.size >= this.limits.max) {
      this.sessions.delete(this.sessions.keys().next().value as string);
    }
    this.sessions.set(hash(id), Date.now() + this.limits.ttlMs);
    return serializeCookie(SESSION_COOKIE, id, {
      httpOnly: true,
      sameSite: 'strict',
      secure,
      path: '/',
      maxAge: Math.floor(this.limits.ttlMs / 1000),
    });
  }

  /** Whether the request carries a live session's cookie. */
  valid(request: FastifyRequest): boolean {
    const id = sessionId(request);
    if (!id) return false;
    const key = hash(id);
    const expires = this.sessions.get(key);
    if (expires === undefined) return false;
    if (expires <= Date.now()) {
      this.sessions.delete(key);
      return false;
    }
    return true;
  }

  /** Ends the request's session (if any); returns the `set-cookie` value that clears the cookie. */
  end(request: FastifyRequest): string {
    const id = sessionId(request);
    if (id) this.sessions.delete(hash(id));
    return serializeCookie(SESSION_COOKIE, '', {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      maxAge: 0,
    });
  }

  get size(): number {
    return this.sessions.size;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, expires] of this.sessions) if (expires <= now) this.sessions.delete(key);
  }
}

function sessionId(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  return parseCookies(header)[SESSION_COOKIE] || undefined;
}
