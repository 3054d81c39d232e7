import { createHash, timingSafeEqual } from 'node:crypto';
import type { AuthenticatedCaller, Kernel } from '@libos/kernel';
import type { FastifyRequest } from 'fastify';
import { type ConsoleSessions, CSRF_HEADER } from './console-sessions.js';
import { HttpRefusal } from './http-errors.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest();

/** The bearer token of a request, or a Basic password (browsers on Bull Board). */
export function presentedToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const [scheme, value] = header.split(' ', 2);
  if (!value) return undefined;
  if (scheme?.toLowerCase() === 'bearer') return value.trim();
  if (scheme?.toLowerCase() === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) : undefined;
  }
  return undefined;
}

/** Compares against the admin token's hash in constant time; the token itself is not kept. */
export class AdminAuth {
  private readonly hash: Buffer;
  /** The console's sessions: a live session cookie is the admin too (see `check`). */
  sessions: ConsoleSessions | undefined;

  constructor(adminToken: string) {
    this.hash = sha256(adminToken);
  }

  matches(token: string): boolean {
    return timingSafeEqual(sha256(token), this.hash);
  }

  /**
   * Throws 401 without a token (or a live console session), 403 with a token that is not the
   * admin's (a process token). A session is looked up in Redis (one EXISTS).
   */
  async check(request: FastifyRequest): Promise<void> {
    const token = presentedToken(request);
    if (!token && (await this.sessions?.valid(request))) {
      // SameSite=Strict keeps the cookie off cross-site requests; the custom header, which no
      // cross-site form can set, guards state changes besides.
      const reads = request.method === 'GET' || request.method === 'HEAD';
      if (!reads && request.headers[CSRF_HEADER] === undefined) {
        throw new HttpRefusal(
          'permission_denied',
          `a console session's ${request.method} needs the ${CSRF_HEADER} header (CSRF guard)`,
        );
      }
      return;
    }
    if (!token)
      throw new HttpRefusal(
        'unauthenticated',
        'the admin token is required: Authorization: Bearer <token>, or Basic with the token as the password',
      );
    if (!this.matches(token))
      throw new HttpRefusal('permission_denied', "the bearer token is not this coordinator's admin token");
  }
}

/**
 * Process tokens for tool calls. A token is checked against Redis the first time this
 * coordinator sees it, so a request with a bad token is 401 before its body is looked at; after
 * that, only by the scripts it runs, which compare it with the row in the same step as the call
 * (a token that died since is refused there). Remembers token hashes, never tokens, and at most
 * `max` of them (oldest forgotten first).
 */
export class ProcessAuth {
  private readonly proven = new Set<string>();

  constructor(
    private readonly kernel: Kernel,
    private readonly max = 10_000,
  ) {}

  async caller(token: string): Promise<AuthenticatedCaller> {
    const presented = this.kernel.callerOf(token);
    const key = `${presented.pid}.${presented.proof.tokenHash}`;
    if (this.proven.has(key)) return presented;
    const caller = await this.kernel.authenticate(token);
    this.proven.add(key);
    if (this.proven.size > this.max) this.proven.delete(this.proven.values().next().value as string);
    return caller;
  }
}
