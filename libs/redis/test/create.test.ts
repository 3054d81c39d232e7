import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis, startRedisCluster, type TestRedis } from '@libos/testkit';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRedis, createRedis, describeRedisError, redisSettingsFromEnv } from '../src/index.js';

const PASSWORD = 'factory-test-password-0123456789';
let redis: TestRedis;
let dir: string;
let passwordFile: string;

beforeAll(async () => {
  redis = await startRedis({ password: PASSWORD, unixSocket: true });
  dir = await mkdtemp(join(tmpdir(), 'libos-redis-create-'));
  passwordFile = join(dir, 'redis-password');
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
});
afterAll(async () => {
  await redis?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('createRedis against a Redis that requires a password', () => {
  it('authenticates with LIBOS_REDIS_PASSWORD_FILE, for every purpose, and duplicates keep it', async () => {
    const settings = redisSettingsFromEnv({
      LIBOS_REDIS_URL: redis.url,
      LIBOS_REDIS_PASSWORD_FILE: passwordFile,
    });
    const commands = createRedis(settings, 'commands', { enableAutoPipelining: true });
    const queues = createRedis(settings, 'queues');
    const subscriber = createRedis(settings, 'subscriber');
    try {
      expect((queues as Redis).options.maxRetriesPerRequest).toBeNull();
      expect(await commands.set('k', 'v')).toBe('OK');
      expect(await queues.get('k')).toBe('v');
      const received = new Promise<string>((resolve) =>
        subscriber.on('message', (_c, m: string) => resolve(m)),
      );
      await subscriber.subscribe('ch');
      await commands.publish('ch', 'hello');
      expect(await received).toBe('hello');
      const twin = (commands as Redis).duplicate();
      expect(await twin.ping()).toBe('PONG');
      twin.disconnect();
      await checkRedis(settings);
    } finally {
      for (const client of [commands, queues, subscriber]) client.disconnect();
    }
  });

  it('authenticates over TCP with the password in the URL', async () => {
    const socketless = await startRedis({ password: PASSWORD });
    try {
      const url = socketless.url.replace('redis://', `redis://:${PASSWORD}@`);
      const client = createRedis(redisSettingsFromEnv({ LIBOS_REDIS_URL: url }), 'commands');
      expect(await client.ping()).toBe('PONG');
      client.disconnect();
    } finally {
      await socketless.stop();
    }
  });

  it('without the password fails with NOAUTH and says which variable to set', async () => {
    const settings = redisSettingsFromEnv({ LIBOS_REDIS_URL: redis.url });
    await expect(checkRedis(settings)).rejects.toThrow(
      new RegExp(`redis at ${redis.url}: NOAUTH Authentication required.*set LIBOS_REDIS_PASSWORD_FILE`),
    );
    const client = createRedis(settings, 'commands', { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    await expect(client.ping()).rejects.toThrow(/NOAUTH/);
    client.disconnect();
  });

  it('with a wrong password fails with WRONGPASS, names the file, and never prints a password', async () => {
    const wrongFile = join(dir, 'wrong');
    await writeFile(wrongFile, 'not-the-password');
    const settings = redisSettingsFromEnv({
      LIBOS_REDIS_URL: redis.url,
      LIBOS_REDIS_PASSWORD_FILE: wrongFile,
    });
    const failure = await checkRedis(settings).then(
      () => undefined,
      (error: Error) => error.message,
    );
    expect(failure).toMatch(/WRONGPASS/);
    expect(failure).toContain(`the password in ${wrongFile}`);
    expect(failure).not.toContain('not-the-password');
    expect(failure).not.toContain(PASSWORD);
  });

  it('describes errors with the address but not the password of the URL', () => {
    const settings = redisSettingsFromEnv({ LIBOS_REDIS_URL: 'redis://:hunter2@10.0.0.9:6379' });
    const message = describeRedisError(settings, new Error('connect ECONNREFUSED 10.0.0.9:6379'));
    expect(message).toBe('redis at redis://:***@10.0.0.9:6379: connect ECONNREFUSED 10.0.0.9:6379');
  });
});

describe('createRedis on a Redis Cluster (LIBOS_REDIS_CLUSTER_NODES)', () => {
  it('builds an ioredis Cluster for every purpose, with the password file, and sharded pub/sub', async () => {
    const cluster = await startRedisCluster({ masters: 3, password: PASSWORD });
    const settings = redisSettingsFromEnv({
      LIBOS_REDIS_CLUSTER_NODES: cluster.nodes,
      LIBOS_REDIS_PASSWORD_FILE: passwordFile,
    });
    const commands = createRedis(settings, 'commands') as Cluster;
    const queues = createRedis(settings, 'queues') as Cluster;
    const subscriber = createRedis(settings, 'subscriber') as Cluster;
    try {
      expect(commands.isCluster).toBe(true);
      expect(queues.options.redisOptions?.maxRetriesPerRequest).toBeNull();
      // Keys of many slots, so every master answers.
      for (let i = 0; i < 30; i += 1) expect(await commands.set(`k{${i}}`, String(i))).toBe('OK');
      expect(await queues.get('k{29}')).toBe('29');
      const masters = commands.nodes('master');
      expect(masters).toHaveLength(3);
      const counts = await Promise.all(masters.map((node) => node.dbsize()));
      expect(counts.every((n) => n > 0)).toBe(true);
      // A sharded channel per tag, whatever master holds it.
      const received: string[] = [];
      const all = new Promise<void>((resolve) =>
        subscriber.on('smessage', (_channel: string, message: string) => {
          received.push(message);
          if (received.length === 3) resolve();
        }),
      );
      for (const tag of ['a', 'b', 'c']) await subscriber.ssubscribe(`{${tag}}:ch`);
      for (const tag of ['a', 'b', 'c']) await commands.spublish(`{${tag}}:ch`, tag);
      await all;
      expect(received.sort()).toEqual(['a', 'b', 'c']);
      await checkRedis(settings);
      const anonymous = redisSettingsFromEnv({ LIBOS_REDIS_CLUSTER_NODES: cluster.nodes });
      await expect(checkRedis(anonymous)).rejects.toThrow(/^redis at cluster 127\.0\.0\.1:\d+/);
    } finally {
      for (const client of [commands, queues, subscriber]) client.disconnect();
      await cluster.stop();
    }
  });
});
