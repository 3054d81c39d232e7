import { once } from 'node:events';
import { startRedis, type TestRedis } from '@libos/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionLost, createRedis, redisSettingsFromEnv } from '../src/index.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

/** Whether `promise` has settled (after the events already emitted have run their listeners). */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  const pending = Symbol('pending');
  return (
    (await Promise.race([promise, new Promise((resolve) => setImmediate(resolve, pending))])) !== pending
  );
}

describe('connectionLost', () => {
  it('names the client that ended without being closed, and not one the part closed', async () => {
    const settings = redisSettingsFromEnv({ LIBOS_REDIS_URL: redis.url });
    // No reconnects: a connection the server drops ends the client, as a client library that
    // gives up would.
    const commands = createRedis(settings, 'commands', { retryStrategy: () => null });
    const queues = createRedis(settings, 'queues', { retryStrategy: () => null });
    const admin = createRedis(settings, 'commands');
    let closing = false;
    try {
      await Promise.all([commands.ping(), queues.ping(), admin.ping()]);
      const logged: string[] = [];
      const log = { error: (message: string) => void logged.push(message) };
      const lost = connectionLost({ commands, queues }, () => closing, log, 'worker');
      const id = await commands.client('ID');
      const ended = once(commands, 'end');
      await admin.client('KILL', 'ID', String(id));
      await ended;
      expect(await lost).toBe('its Redis connection for commands ended and will not reconnect');
      expect(logged).toEqual([
        'the worker cannot go on: its Redis connection for commands ended and will not reconnect',
      ]);
      expect(await queues.ping()).toBe('PONG');

      // The part closing its own connection is not a loss.
      const again = connectionLost({ queues }, () => closing, log, 'worker');
      closing = true;
      const quit = once(queues, 'end');
      queues.disconnect();
      await quit;
      expect(await settled(again)).toBe(false);
      expect(logged).toHaveLength(1);
    } finally {
      for (const client of [commands, queues, admin]) client.disconnect();
    }
  });
});
