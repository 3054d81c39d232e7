import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coordinatorConfigSchema } from '../src/config.js';
import { startCoordinator } from '../src/start.js';
import { ADMIN_TOKEN, type Harness, raw, startHarness } from './helpers.js';

const TTL_MS = 1500;
const MAX_STREAMS = 2;
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    LIBOS_CONSOLE_SESSION_TTL_MS: String(TTL_MS),
    LIBOS_CONSOLE_MAX_SESSIONS: '2',
    LIBOS_CONSOLE_MAX_STREAMS: String(MAX_STREAMS),
  });
});
afterAll(async () => {
  await h?.stop();
});

async function logIn(
  token = ADMIN_TOKEN,
  url = h.coordinator.url,
): Promise<{ status: number; cookie: string | undefined }> {
  const answer = await fetch(`${url}/ui/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }).toString(),
    redirect: 'manual',
  });
  const cookie = answer.headers.get('set-cookie')?.split(';')[0];
  return { status: answer.status, cookie };
}

const asCookie = (cookie: string | undefined, init: RequestInit = {}) => ({
  ...init,
  headers: { ...(init.headers as Record<string, string>), cookie: cookie ?? '' },
});

describe('console sessions', () => {
  it('a login sets an httpOnly SameSite=Strict cookie holding no token; the admin API takes it; logout ends it', async () => {
    const login = await fetch(`${h.coordinator.url}/ui/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${encodeURIComponent(ADMIN_TOKEN)}`,
      redirect: 'manual',
    });
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/ui/');
    const setCookie = login.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(
      /^libos_session=[A-Za-z0-9_-]{43}; Max-Age=1; Path=\/; HttpOnly; SameSite=Strict$/,
    );
    expect(setCookie).not.toContain(ADMIN_TOKEN);
    const cookie = setCookie.split(';')[0];

    expect((await raw(h.coordinator.url, '/v1/admin/images', asCookie(cookie))).status).toBe(200);
    const logout = await fetch(`${h.coordinator.url}/ui/logout`, {
      ...asCookie(cookie),
      method: 'POST',
      redirect: 'manual',
    });
    expect(logout.status).toBe(303);
    expect(logout.headers.get('set-cookie')).toMatch(/^libos_session=; Max-Age=0/);
    const after = await raw(h.coordinator.url, '/v1/admin/images', asCookie(cookie));
    expect(after.status).toBe(401);
  });

  it('refuses a wrong token with the form again and no cookie', async () => {
    const answer = await logIn('not-the-admin-token');
    expect(answer).toEqual({ status: 401, cookie: undefined });
  });

  it('a session expires after LIBOS_CONSOLE_SESSION_TTL_MS', async () => {
    const { cookie } = await logIn();
    expect((await raw(h.coordinator.url, '/v1/admin/images', asCookie(cookie))).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, TTL_MS + 100));
    expect((await raw(h.coordinator.url, '/v1/admin/images', asCookie(cookie))).status).toBe(401);
  });

  it('keeps at most LIBOS_CONSOLE_MAX_SESSIONS sessions: a login beyond ends the oldest', async () => {
    const first = await logIn();
    const second = await logIn();
    const third = await logIn();
    const status = async (cookie: string | undefined) =>
      (await raw(h.coordinator.url, '/v1/admin/images', asCookie(cookie))).status;
    expect([await status(first.cookie), await status(second.cookie), await status(third.cookie)]).toEqual([
      401, 200, 200,
    ]);
  });

  it('a session holds on every coordinator of the same Redis, which keeps only its hash; a logout on one ends it on all', async () => {
    const other = await startCoordinator(
      coordinatorConfigSchema.parse({
        LIBOS_REDIS_URL: h.redis.url,
        LIBOS_ADMIN_TOKEN: ADMIN_TOKEN,
        LIBOS_PORT: '0',
        LIBOS_CONSOLE_SESSION_TTL_MS: String(TTL_MS),
      }),
      { logger: pino({ level: 'silent' }) },
    );
    const redis = new Redis(h.redis.url);
    try {
      const { cookie } = await logIn(ADMIN_TOKEN, other.url);
      const id = (cookie ?? '').split('=')[1] ?? '';
      expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
      // logged in on the other coordinator, accepted by this one
      expect((await raw(h.coordinator.url, '/v1/admin/images', asCookie(cookie))).status).toBe(200);
      expect((await raw(other.url, '/v1/admin/images', asCookie(cookie))).status).toBe(200);

      // Redis holds the id's sha256 as a key expiring with the session, never the id or the token.
      const digest = createHash('sha256').update(id).digest('base64url');
      const keys = await redis.keys('*console*');
      const own = keys.filter((key) => key.endsWith(`:s:${digest}`));
      expect(own).toHaveLength(1);
      const ttl = await redis.pttl(own[0] as string);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(TTL_MS);
      for (const key of keys) {
        expect(key).not.toContain(id);
        const type = await redis.type(key);
        const values = type === 'zset' ? await redis.zrange(key, 0, -1) : [await redis.get(key)];
        expect(values.join(' ')).not.toContain(id);
        expect(values.join(' ')).not.toContain(ADMIN_TOKEN);
      }

      // a logout on this coordinator ends it on the other
      await fetch(`${h.coordinator.url}/ui/logout`, {
        ...asCookie(cookie),
        method: 'POST',
        redirect: 'manual',
      });
      expect((await raw(other.url, '/v1/admin/images', asCookie(cookie))).status).toBe(401);
      expect(await redis.exists(own[0] as string)).toBe(0);
    } finally {
      redis.disconnect();
      await other.close();
    }
  });

  it('a cookie-authenticated state change needs the console header (CSRF guard); bearer callers do not', async () => {
    const { cookie } = await logIn();
    const root = await h.admin.createProcess({ goal: 'signalled by cookie' });
    const body = JSON.stringify({ signal: 'pause' });
    const json = { 'content-type': 'application/json' };
    const bare = await raw(
      h.coordinator.url,
      `/v1/admin/processes/${root.pid}/signal`,
      asCookie(cookie, { method: 'POST', body, headers: json }),
    );
    expect(bare.status).toBe(403);
    expect(bare.text).toMatch(/x-libos-console/);
    expect((await h.admin.getProcess(root.pid)).status).toBe('running');
    const guarded = await raw(
      h.coordinator.url,
      `/v1/admin/processes/${root.pid}/signal`,
      asCookie(cookie, { method: 'POST', body, headers: { ...json, 'x-libos-console': '1' } }),
    );
    expect(guarded.status).toBe(200);
    expect((await h.admin.getProcess(root.pid)).status).toBe('paused');
  });
});

describe('the event stream', () => {
  it("streams a subtree's changes once ready, and refuses a stream beyond LIBOS_CONSOLE_MAX_STREAMS", async () => {
    const root = await h.admin.createProcess({ goal: 'watched' });
    const open = async () => {
      const controller = new AbortController();
      const answer = await fetch(`${h.coordinator.url}/v1/admin/processes/${root.pid}/events`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        signal: controller.signal,
      });
      return { answer, controller };
    };
    const first = await open();
    expect(first.answer.status).toBe(200);
    expect(first.answer.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = first.answer.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const until = async (pattern: RegExp) => {
      while (!pattern.test(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${pattern}: ${text}`);
        text += decoder.decode(value, { stream: true });
      }
    };
    await until(/event: ready/);
    await h.admin.signalProcess(root.pid, 'pause');
    await until(/event: changes\ndata: .*"status":"paused"/);
    expect(text).toContain(`"pid":"${root.pid}"`);

    const second = await open();
    expect(second.answer.status).toBe(200);
    const third = await open();
    expect(third.answer.status).toBe(429);
    expect(await third.answer.json()).toMatchObject({ error: { code: 'resource_exhausted' } });
    second.controller.abort();
    first.controller.abort();
    // Closed streams free their places.
    await expect
      .poll(async () => {
        const again = await open();
        again.controller.abort();
        return again.answer.status;
      })
      .toBe(200);
    const unknown = await raw(h.coordinator.url, '/v1/admin/processes/pnosuchroot1/events', {
      token: ADMIN_TOKEN,
    });
    expect(unknown.status).toBe(404);
  });
});
