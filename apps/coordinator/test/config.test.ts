import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis, type TestRedis } from '@libos/testkit';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCoordinatorConfig } from '../src/config.js';
import { startCoordinator } from '../src/start.js';

const TOKEN = 'file-admin-token-0123456789abcdef';
const REDIS_PASSWORD = 'coordinator-redis-password-0123456789';
let dir: string;
let redis: TestRedis;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'libos-coordinator-config-'));
  await writeFile(join(dir, 'admin-token'), `${TOKEN}\n`, { mode: 0o600 });
  await writeFile(join(dir, 'redis-password'), `${REDIS_PASSWORD}\n`, { mode: 0o600 });
  redis = await startRedis({ password: REDIS_PASSWORD });
});
afterAll(async () => {
  await redis?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('loadCoordinatorConfig', () => {
  it('reads the admin token from LIBOS_ADMIN_TOKEN_FILE, trimmed', () => {
    const config = loadCoordinatorConfig({ LIBOS_ADMIN_TOKEN_FILE: join(dir, 'admin-token') });
    expect(config.LIBOS_ADMIN_TOKEN).toBe(TOKEN);
    expect(loadCoordinatorConfig({ LIBOS_ADMIN_TOKEN: TOKEN }).LIBOS_ADMIN_TOKEN).toBe(TOKEN);
  });

  it("bounds the reaper's hold on its shards: 100 ms to a day, default 3 sweeps", () => {
    expect(loadCoordinatorConfig({ LIBOS_ADMIN_TOKEN: TOKEN }).LIBOS_REAPER_HOLD_MS).toBeUndefined();
    expect(
      loadCoordinatorConfig({ LIBOS_ADMIN_TOKEN: TOKEN, LIBOS_REAPER_HOLD_MS: '6000' }).LIBOS_REAPER_HOLD_MS,
    ).toBe(6000);
    for (const bad of ['99', '86400001', 'soon'])
      expect(() => loadCoordinatorConfig({ LIBOS_ADMIN_TOKEN: TOKEN, LIBOS_REAPER_HOLD_MS: bad })).toThrow(
        /LIBOS_REAPER_HOLD_MS/,
      );
  });

  it('bounds LIBOS_TERMINATE_BATCH: 1 to 100,000 children per script, default 50', () => {
    expect(loadCoordinatorConfig({ LIBOS_ADMIN_TOKEN: TOKEN }).LIBOS_TERMINATE_BATCH).toBe(50);
    expect(
      loadCoordinatorConfig({ LIBOS_ADMIN_TOKEN: TOKEN, LIBOS_TERMINATE_BATCH: '200' }).LIBOS_TERMINATE_BATCH,
    ).toBe(200);
    for (const bad of ['0', '100001', 'many'])
      expect(() => loadCoordinatorConfig({ LIBOS_ADMIN_TOKEN: TOKEN, LIBOS_TERMINATE_BATCH: bad })).toThrow(
        /LIBOS_TERMINATE_BATCH/,
      );
  });

  it('refuses both token variables, an unreadable file, a short token, and a bad Redis URL', async () => {
    expect(() =>
      loadCoordinatorConfig({ LIBOS_ADMIN_TOKEN: TOKEN, LIBOS_ADMIN_TOKEN_FILE: join(dir, 'admin-token') }),
    ).toThrow(/not both/);
    expect(() => loadCoordinatorConfig({ LIBOS_ADMIN_TOKEN_FILE: join(dir, 'missing') })).toThrow(
      /LIBOS_ADMIN_TOKEN_FILE: cannot read .*missing \(ENOENT\)/,
    );
    await writeFile(join(dir, 'short'), 'short\n');
    expect(() => loadCoordinatorConfig({ LIBOS_ADMIN_TOKEN_FILE: join(dir, 'short') })).toThrow(
      /at least 16/,
    );
    expect(() =>
      loadCoordinatorConfig({ LIBOS_ADMIN_TOKEN: TOKEN, LIBOS_REDIS_URL: 'redis-host:6379' }),
    ).toThrow(/LIBOS_REDIS_URL/);
  });
});

describe('startCoordinator', () => {
  it('reaches a Redis that requires a password through LIBOS_REDIS_PASSWORD_FILE', async () => {
    const config = loadCoordinatorConfig({
      LIBOS_ADMIN_TOKEN_FILE: join(dir, 'admin-token'),
      LIBOS_REDIS_URL: redis.url,
      LIBOS_REDIS_PASSWORD_FILE: join(dir, 'redis-password'),
      LIBOS_PORT: '0',
    });
    const coordinator = await startCoordinator(config, { logger: pino({ level: 'silent' }) });
    try {
      const health = await fetch(`${coordinator.url}/healthz`);
      expect(health.status).toBe(200);
      const listed = await fetch(`${coordinator.url}/v1/admin/processes`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(listed.status).toBe(200);
    } finally {
      await coordinator.close();
    }
  });

  it('says at start when LIBOS_REDIS_MIN_REPLICAS asks for replicas Redis does not have, and creating a root gets 503 replication', async () => {
    const config = loadCoordinatorConfig({
      LIBOS_ADMIN_TOKEN_FILE: join(dir, 'admin-token'),
      LIBOS_REDIS_URL: redis.url,
      LIBOS_REDIS_PASSWORD_FILE: join(dir, 'redis-password'),
      LIBOS_REDIS_MIN_REPLICAS: '1',
      LIBOS_REDIS_REPLICA_TIMEOUT_MS: '200',
      LIBOS_PORT: '0',
    });
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: 'warn' },
      { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const coordinator = await startCoordinator(config, { logger });
    try {
      const warned = () =>
        lines.find((line) => /LIBOS_REDIS_MIN_REPLICAS asks for more replicas/.test(String(line.msg)));
      for (let i = 0; i < 100 && !warned(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(warned()).toMatchObject({ required: 1, connected: 0 });
      const admin = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      const root = await fetch(`${coordinator.url}/v1/admin/processes`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ goal: 'no replica' }),
      });
      expect(root.status).toBe(503);
      expect(await root.json()).toMatchObject({
        error: { code: 'unavailable', details: { reason: 'replication' } },
      });
    } finally {
      await coordinator.close();
    }
  });

  it('fails to start on a missing password file, naming the variable', async () => {
    const config = loadCoordinatorConfig({
      LIBOS_ADMIN_TOKEN: TOKEN,
      LIBOS_REDIS_URL: redis.url,
      LIBOS_REDIS_PASSWORD_FILE: join(dir, 'no-such-file'),
      LIBOS_PORT: '0',
    });
    await expect(startCoordinator(config, { logger: pino({ level: 'silent' }) })).rejects.toThrow(
      /LIBOS_REDIS_PASSWORD_FILE: cannot read/,
    );
  });
});
