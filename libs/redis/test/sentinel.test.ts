import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
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

/** A TCP proxy to `port` on loopback that delays every chunk, both ways, by `delayMs`. */
async function delayingProxy(port: number, delayMs: number): Promise<{ port: number; close(): void }> {
  const sockets = new Set<Socket>();
  const server = createServer((inbound) => {
    const outbound = connect(port, '127.0.0.1');
    for (const [from, to] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      sockets.add(from);
      from.on('data', (chunk) => setTimeout(() => to.writable && to.write(chunk), delayMs));
      from.on('close', () => setTimeout(() => to.destroy(), delayMs));
      from.on('error', () => undefined);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** Writes `key` until a write succeeds; fails once `withinMs` passed or the client has ended. */
async function eventuallyWrites(client: Redis, key: string, withinMs: number): Promise<void> {
  const until = Date.now() + withinMs;
  for (;;) {
    try {
      await client.set(key, 'after');
      return;
    } catch (error) {
      if (client.status === 'end' || Date.now() > until)
        throw new Error(`${key}: no write (status ${client.status}): ${String(error)}`);
    }
  }
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

  it('a client asking the sentinels for the primary when +switch-master comes keeps reconnecting', async () => {
    // A group of its own (the test above leaves its old primary dead), reached through proxies
    // that hold each packet 300 ms: a client that tries again every millisecond is then nearly
    // always waiting for a sentinel's answer, which is when the sentinels announce the new
    // primary. ioredis's failover detector of the connection that died used to end such a
    // client for good ("Connection is closed.", status end); 6 of 6 clients, twice in two runs.
    const own = await startSentinelGroup({ replicas: 2 });
    const proxies = await Promise.all(own.sentinelPorts.map((port) => delayingProxy(port, 300)));
    const settings = redisSettingsFromEnv({
      ...own.env,
      LIBOS_REDIS_SENTINELS: proxies.map((proxy) => `127.0.0.1:${proxy.port}`).join(','),
    });
    if (settings.topology !== 'sentinel') throw new Error('not sentinel');
    // updateSentinels off: the sentinels would otherwise tell the clients their own addresses.
    const clients = Array.from({ length: 6 }, () =>
      createSentinel(settings, 'commands', { retryStrategy: () => 1, updateSentinels: false }),
    );
    const ended: number[] = [];
    clients.forEach((client, i) => {
      client.on('error', () => undefined);
      client.on('end', () => ended.push(i));
    });
    try {
      await Promise.all(clients.map((client, i) => client.set(`c${i}`, 'before')));
      const first = await own.primaryPort();
      await own.kill(first);
      const next = await own.failedOverFrom(first, 30_000);
      for (const [i, client] of clients.entries()) {
        await eventuallyWrites(client, `c${i}`, 20_000);
        expect(await servedBy(client)).toBe(next);
      }
      expect(ended).toEqual([]);
    } finally {
      for (const client of clients) client.disconnect();
      for (const proxy of proxies) proxy.close();
      await own.stop();
    }
  }, 60_000);

  it('without the sentinels’ password, says so', async () => {
    const settings = redisSettingsFromEnv(group.env);
    await expect(checkRedis(settings)).rejects.toThrow(/sentinel libos via 127\.0\.0\.1:/);
  });
});
