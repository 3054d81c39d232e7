import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SentinelGroup, startSentinelGroup } from '@libos/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRedis, createSentinel, redisSettingsFromEnv } from '../src/index.js';

// A real primary, two replicas and three sentinels that require a password of their own.
const SENTINEL_PASSWORD = 'sentinel-test-password-0123456789';
let group: SentinelGroup;
let dir: string;

beforeAll(async () => {
  group = await startSentinelGroup({ replicas: 2, sentinelPassword: SENTINEL_PASSWORD });
  dir = await mkdtemp(join(tmpdir(), 'libos-redis-sentinel-'));
  await writeFile(join(dir, 'sentinel-password'), `${SENTINEL_PASSWORD}\n`, { mode: 0o600 });
}, 60_000);
afterAll(async () => {
  await group?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The port of the server a client is connected to, as that server says. */
async function servedBy(client: Redis): Promise<number> {
  const [, port] = (await client.call('CONFIG', 'GET', 'port')) as [string, string];
  return Number(port);
}

describe('createSentinel', () => {
  it('reaches the primary the sentinels name (with their password), and follows a failover without a new client', async () => {
    const settings = redisSettingsFromEnv({
      ...group.env,
      LIBOS_REDIS_SENTINEL_PASSWORD_FILE: join(dir, 'sentinel-password'),
    });
    await checkRedis(settings);
    if (settings.topology !== 'sentinel') throw new Error('not sentinel');
    const commands = createSentinel(settings, 'commands', { enableAutoPipelining: true });
    const subscriber = createSentinel(settings, 'subscriber');
    const errors: string[] = [];
    for (const client of [commands, subscriber])
      client.on('error', (error: Error) => errors.push(error.message));
    try {
      await commands.set('before', '1');
      const first = await group.primaryPort();
      expect(await servedBy(commands)).toBe(first);
      // Writes replicated (WAIT) before the kill, so the promoted replica has them.
      expect(await commands.wait(2, 5_000)).toBe(2);

      const heard = new Promise<string>((resolve) => {
        subscriber.on('message', (_channel: string, message: string) => resolve(message));
      });
      await subscriber.subscribe('failover-test');

      await group.kill(first);
      const next = await group.failedOverFrom(first, 30_000);
      // The same client: its next write goes to the new primary once ioredis asked the sentinels.
      for (;;) {
        try {
          await commands.set('after', '2');
          break;
        } catch {
          // failing over: 'commands' gives up after 3 retries; ask again
        }
      }
      expect(await servedBy(commands)).toBe(next);
      expect(await commands.get('before')).toBe('1');
      // The subscriber resubscribed on the new primary.
      for (;;) {
        const receivers = await commands.publish('failover-test', 'hello');
        if (receivers > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(await heard).toBe('hello');
    } finally {
      commands.disconnect();
      subscriber.disconnect();
    }
  }, 60_000);

  it('without the sentinels’ password, says so', async () => {
    const settings = redisSettingsFromEnv(group.env);
    await expect(checkRedis(settings)).rejects.toThrow(/sentinel libos via 127\.0\.0\.1:/);
  });
});
