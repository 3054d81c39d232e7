import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startRedis, type TestRedis } from '../src/index.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis({ own: true, aof: true });
});
afterAll(async () => {
  await redis.stop();
});

test('a private redis-server keeps acknowledged writes across a crash when AOF is on', async () => {
  expect(redis.source).toBe('redis-server');
  const client = new Redis(redis.url, { maxRetriesPerRequest: null });
  await client.set('survives', 'yes');
  await redis.crash?.();
  expect(await client.get('survives')).toBe('yes');
  client.disconnect();
});

test('each call gets its own server on its own port', async () => {
  const other = await startRedis({ own: true });
  try {
    expect(other.url).not.toBe(redis.url);
    const a = new Redis(redis.url);
    const b = new Redis(other.url);
    await a.set('only-in-a', '1');
    expect(await b.get('only-in-a')).toBeNull();
    a.disconnect();
    b.disconnect();
  } finally {
    await other.stop();
  }
});

test('a server asked for a unix socket is reached through its path, also after a crash', async () => {
  const local = await startRedis({ own: true, aof: true, unixSocket: true });
  try {
    expect(local.url).toMatch(/\/redis\.sock$/);
    const client = new Redis(local.url, { maxRetriesPerRequest: null });
    await client.set('over-the-socket', 'yes');
    expect((await client.client('INFO')) as string).toMatch(/addr=\/.*redis\.sock|addr=unix/);
    await local.crash?.();
    expect(await client.get('over-the-socket')).toBe('yes');
    client.disconnect();
  } finally {
    await local.stop();
  }
});

test('a server asked for a password refuses clients without it', async () => {
  const locked = await startRedis({ password: 'test-password-0123456789' });
  try {
    expect(locked.password).toBe('test-password-0123456789');
    const anonymous = new Redis(locked.url, { maxRetriesPerRequest: 0, enableReadyCheck: false });
    anonymous.on('error', () => {});
    await expect(anonymous.ping()).rejects.toThrow(/NOAUTH/);
    anonymous.disconnect();
    const authenticated = new Redis(locked.url, { password: locked.password });
    expect(await authenticated.ping()).toBe('PONG');
    authenticated.disconnect();
  } finally {
    await locked.stop();
  }
});
