import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse as parseCookies, serialize as serializeCookie } from 'cookie';
import type { FastifyRequest } from 'fastify';
import type { Cluster, Redis } from 'ioredis';

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

const LOGIN_LUA = readFileSync(new URL('./console-sessions.lua', import.meta.url), 'utf8');

/**
 * Console sessions, in Redis, so a login on one coordinator holds on every coordinator behind
 * the same address, and a restart ends none. One key per session, `<prefix>{console}:s:<sha256
 * of the cookie's id>`, expiring with the session (Redis drops it); beside them one sorted set of
 * those hashes by expiry, which bounds how many live at once. Neither the cookie's id nor the
 * admin token is stored anywhere: what Redis holds cannot be presented as a cookie.
 */
export class ConsoleSessions {
  private readonly base: string;
  private readonly index: string;

  constructor(
    private readonly redis: Redis | Cluster,
    prefix: string,
    private readonly limits: SessionLimits,
  ) {
    this.base = `${prefix}{console}:s:`;
    this.index = `${prefix}{console}:sessions`;
  }

  /** Starts a session; returns the `set-cookie` value carrying its id. */
  async start(secure: boolean): Promise<string> {
    const id = randomBytes(32).toString('base64url');
    await this.redis.eval(LOGIN_LUA, 1, this.index, this.base, hash(id), this.limits.ttlMs, this.limits.max);
    return serializeCookie(SESSION_COOKIE, id, {
      httpOnly: true,
      sameSite: 'strict',
      secure,
      path: '/',
      maxAge: Math.floor(this.limits.ttlMs / 1000),
    });
  }

  /** Whether the request carries a live session's cookie (one EXISTS; the key's expiry is the session's). */
  async valid(request: FastifyRequest): Promise<boolean> {
    const id = sessionId(request);
    if (!id) return false;
    return (await this.redis.exists(this.base + hash(id))) === 1;
  }

  /** Ends the request's session (if any) on every coordinator; returns the `set-cookie` value that clears the cookie. */
  async end(request: FastifyRequest): Promise<string> {
    const id = sessionId(request);
    if (id) {
      const key = hash(id);
      // one slot ({console}), one transaction
      await this.redis
        .multi()
        .del(this.base + key)
        .zrem(this.index, key)
        .exec();
    }
    return serializeCookie(SESSION_COOKIE, '', {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      maxAge: 0,
    });
  }
}

function sessionId(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  const id = parseCookies(header)[SESSION_COOKIE];
  // An id this server minted: 32 random bytes, base64url (43 characters).
  return id && /^[A-Za-z0-9_-]{43}$/.test(id) ? id : undefined;
}
