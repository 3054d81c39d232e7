import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { ReplyCutter, startRedis, type TestRedis } from '../src/index.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis({ own: true });
});
afterAll(async () => {
  await redis.stop();
});

test('loses only the marked command’s reply: the server ran it, earlier pipelined replies arrive', async () => {
  const cutter = await ReplyCutter.start(redis.url);
  const client = new Redis(cutter.url, { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false });
  client.on('error', () => undefined);
  const direct = new Redis(redis.url);
  try {
    expect(await client.set('before', 'a')).toBe('OK');
    const cut = cutter.cutReplyTo('marked-key');
    // One write: the first reply is a whole array, the marked command's is the one withheld.
    const [first, marked] = await Promise.allSettled([
      client.mget('before', 'nothing'),
      client.set('marked-key', 'ran'),
    ]);
    await cut;
    expect(first).toEqual({ status: 'fulfilled', value: ['a', null] });
    expect(marked.status).toBe('rejected');
    expect(cutter.cuts).toBe(1);
    expect(await direct.get('marked-key')).toBe('ran');
    // Later connections go through untouched.
    expect(await client.get('marked-key')).toBe('ran');
  } finally {
    client.disconnect();
    direct.disconnect();
    await cutter.close();
  }
});
