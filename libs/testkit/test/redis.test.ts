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
