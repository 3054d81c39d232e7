import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisConfigError, redactRedisUrl, redisSettingsFromEnv } from '../src/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'libos-redis-settings-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The message of the RedisConfigError `env` is refused with (fails if it is accepted). */
function refused(env: Record<string, unknown>): string {
  try {
    redisSettingsFromEnv(env);
  } catch (error) {
    expect(error).toBeInstanceOf(RedisConfigError);
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('redisSettingsFromEnv', () => {
  it('defaults to redis://127.0.0.1:6379 without credentials', () => {
    expect(redisSettingsFromEnv({})).toEqual({
      topology: 'standalone',
      endpoint: { kind: 'tcp', host: '127.0.0.1', port: 6379, tls: false, db: 0 },
      username: undefined,
      password: undefined,
      display: 'redis://127.0.0.1:6379',
      replication: { replicas: 0, timeoutMs: 1000 },
    });
  });

  it('reads host, port, db, TLS, user and password from the URL, and hides the password', () => {
    const settings = redisSettingsFromEnv({
      LIBOS_REDIS_URL: 'rediss://app:p%40ss%2Fw0rd@redis.internal:6380/2',
    });
    expect(settings).toMatchObject({
      topology: 'standalone',
      endpoint: { kind: 'tcp', host: 'redis.internal', port: 6380, tls: true, db: 2 },
    });
    expect(settings.username).toBe('app');
    expect(settings.password?.reveal()).toBe('p@ss/w0rd');
    expect(settings.password?.source).toEqual({ kind: 'url' });
    expect(settings.display).toBe('rediss://app:***@redis.internal:6380/2');
    const printed = [String(settings.password), JSON.stringify(settings), inspect(settings, { depth: 5 })];
    for (const text of printed) expect(text).not.toContain('w0rd');
  });

  it('takes a unix socket path', () => {
    expect(redisSettingsFromEnv({ LIBOS_REDIS_URL: '/run/redis/redis.sock' })).toMatchObject({
      endpoint: { kind: 'socket', path: '/run/redis/redis.sock' },
      display: '/run/redis/redis.sock',
    });
  });

  it('reads the password file, trimmed; it wins over the URL’s, and LIBOS_REDIS_USERNAME over the URL’s user', async () => {
    const file = join(dir, 'password');
    await writeFile(file, '  from-the-file\n', { mode: 0o600 });
    const settings = redisSettingsFromEnv({
      LIBOS_REDIS_URL: 'redis://urluser:from-the-url@h:1',
      LIBOS_REDIS_PASSWORD_FILE: file,
      LIBOS_REDIS_USERNAME: 'worker',
    });
    expect(settings.password?.reveal()).toBe('from-the-file');
    expect(settings.password?.source).toEqual({ kind: 'file', path: file });
    expect(settings.username).toBe('worker');
    expect(settings.display).toBe('redis://urluser:***@h:1');
  });

  it('refuses what it cannot use, naming the variable and never the password', async () => {
    expect(refused({ LIBOS_REDIS_URL: 'http://u:hunter2@h' })).toMatch(/LIBOS_REDIS_URL must be a redis/);
    expect(refused({ LIBOS_REDIS_URL: 'redis:6379' })).toMatch(/LIBOS_REDIS_URL/);
    expect(refused({ LIBOS_REDIS_URL: 'redis://:hunter2@h/x' })).toMatch(/database number.*:\*\*\*@h/);
    expect(refused({ LIBOS_REDIS_URL: 'redis://:hunter2@h?family=6' })).toMatch(/query parameters/);
    expect(
      refused({ LIBOS_REDIS_URL: 'redis://:hunter2@h', LIBOS_REDIS_PASSWORD_FILE: join(dir, 'none') }),
    ).toMatch(/LIBOS_REDIS_PASSWORD_FILE: cannot read .*none \(ENOENT\)/);
    const empty = join(dir, 'empty');
    await writeFile(empty, '\n');
    expect(refused({ LIBOS_REDIS_PASSWORD_FILE: empty })).toMatch(/is empty/);
    if (process.getuid?.() !== 0) {
      const unreadable = join(dir, 'unreadable');
      await writeFile(unreadable, 'x');
      await chmod(unreadable, 0);
      expect(refused({ LIBOS_REDIS_PASSWORD_FILE: unreadable })).toMatch(/EACCES/);
    }
    for (const env of [
      { LIBOS_REDIS_URL: 'redis://:hunter2@h/x' },
      { LIBOS_REDIS_URL: 'redis://:hunter2@h?a=1' },
    ]) {
      expect(refused(env)).not.toContain('hunter2');
    }
  });
});

describe('redisSettingsFromEnv with Sentinel', () => {
  it('reads the sentinels, the master name, both password files and the replica setting; prints no password', async () => {
    const data = join(dir, 'data-password');
    const sentinel = join(dir, 'sentinel-password');
    await writeFile(data, 'data-secret\n', { mode: 0o600 });
    await writeFile(sentinel, 'sentinel-secret\n', { mode: 0o600 });
    const settings = redisSettingsFromEnv({
      LIBOS_REDIS_SENTINELS: '10.0.0.1:26379, sentinel-b:26380,[::1]:26381',
      LIBOS_REDIS_SENTINEL_MASTER: 'libos',
      LIBOS_REDIS_PASSWORD_FILE: data,
      LIBOS_REDIS_SENTINEL_PASSWORD_FILE: sentinel,
      LIBOS_REDIS_USERNAME: 'app',
      LIBOS_REDIS_MIN_REPLICAS: '1',
      LIBOS_REDIS_REPLICA_TIMEOUT_MS: '500',
    });
    expect(settings).toMatchObject({
      topology: 'sentinel',
      master: 'libos',
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: 'sentinel-b', port: 26380 },
        { host: '::1', port: 26381 },
      ],
      username: 'app',
      replication: { replicas: 1, timeoutMs: 500 },
    });
    if (settings.topology !== 'sentinel') throw new Error('not sentinel');
    expect(settings.password?.reveal()).toBe('data-secret');
    expect(settings.sentinelPassword?.reveal()).toBe('sentinel-secret');
    const printed = [settings.display, JSON.stringify(settings), inspect(settings, { depth: 5 })].join('\n');
    expect(printed).not.toContain('secret');
    expect(settings.display).toBe('sentinel libos via 10.0.0.1:26379,sentinel-b:26380,[::1]:26381');
  });

  it('refuses a half or conflicting Sentinel setting, naming the variable', async () => {
    expect(refused({ LIBOS_REDIS_SENTINELS: 'h:26379' })).toMatch(/LIBOS_REDIS_SENTINEL_MASTER/);
    expect(refused({ LIBOS_REDIS_SENTINEL_MASTER: 'libos' })).toMatch(/LIBOS_REDIS_SENTINELS/);
    expect(
      refused({
        LIBOS_REDIS_SENTINELS: 'h:26379',
        LIBOS_REDIS_SENTINEL_MASTER: 'libos',
        LIBOS_REDIS_URL: 'redis://:hunter2@h',
      }),
    ).toMatch(/LIBOS_REDIS_URL and LIBOS_REDIS_SENTINELS are both set/);
    expect(refused({ LIBOS_REDIS_SENTINELS: 'h', LIBOS_REDIS_SENTINEL_MASTER: 'libos' })).toMatch(
      /LIBOS_REDIS_SENTINELS: 'h' is not host:port/,
    );
    expect(refused({ LIBOS_REDIS_SENTINELS: 'h:99999', LIBOS_REDIS_SENTINEL_MASTER: 'libos' })).toMatch(
      /LIBOS_REDIS_SENTINELS/,
    );
    expect(refused({ LIBOS_REDIS_SENTINELS: ' , ', LIBOS_REDIS_SENTINEL_MASTER: 'libos' })).toMatch(
      /lists no sentinel/,
    );
    expect(refused({ LIBOS_REDIS_SENTINELS: 'h:1', LIBOS_REDIS_SENTINEL_MASTER: 'a b' })).toMatch(
      /LIBOS_REDIS_SENTINEL_MASTER must be a name/,
    );
    expect(
      refused({
        LIBOS_REDIS_SENTINELS: 'h:1',
        LIBOS_REDIS_SENTINEL_MASTER: 'libos',
        LIBOS_REDIS_SENTINEL_PASSWORD_FILE: join(dir, 'none'),
      }),
    ).toMatch(/LIBOS_REDIS_SENTINEL_PASSWORD_FILE: cannot read/);
    expect(refused({ LIBOS_REDIS_MIN_REPLICAS: '-1' })).toMatch(/LIBOS_REDIS_MIN_REPLICAS/);
    expect(refused({ LIBOS_REDIS_REPLICA_TIMEOUT_MS: '0' })).toMatch(/LIBOS_REDIS_REPLICA_TIMEOUT_MS/);
  });
});

describe('redactRedisUrl', () => {
  it('hides the password and keeps the rest', () => {
    expect(redactRedisUrl('redis://:secret@h:6379/1')).toBe('redis://:***@h:6379/1');
    expect(redactRedisUrl('rediss://user:secret@h')).toBe('rediss://user:***@h');
    expect(redactRedisUrl('redis://user@h')).toBe('redis://user@h');
    expect(redactRedisUrl('redis://h:6379')).toBe('redis://h:6379');
    expect(redactRedisUrl('/run/redis.sock')).toBe('/run/redis.sock');
  });

  it('hides a password that breaks the URL (unescaped / ? # @ in it)', () => {
    expect(redactRedisUrl('redis://:se/cr?e#t@h:1')).toBe('redis://:***@h:1');
    expect(redactRedisUrl('redis://u:a@b@h')).toBe('redis://u:***@h');
  });
});

describe('redisSettingsFromEnv: LIBOS_REDIS_CLUSTER_NODES', () => {
  it('refuses a cluster with LIBOS_REDIS_MIN_REPLICAS or with sentinels, naming the variables', () => {
    expect(refused({ LIBOS_REDIS_CLUSTER_NODES: 'a:7000', LIBOS_REDIS_MIN_REPLICAS: '1' })).toMatch(
      /LIBOS_REDIS_MIN_REPLICAS is not supported on a Redis Cluster/,
    );
    expect(
      refused({
        LIBOS_REDIS_CLUSTER_NODES: 'a:7000',
        LIBOS_REDIS_SENTINELS: 's:26379',
        LIBOS_REDIS_SENTINEL_MASTER: 'libos',
      }),
    ).toMatch(/LIBOS_REDIS_SENTINELS and LIBOS_REDIS_CLUSTER_NODES are both set/);
    expect(refused({ LIBOS_REDIS_CLUSTER_NODES: 'a:7000', LIBOS_REDIS_URL: 'redis://b:6379' })).toMatch(
      /LIBOS_REDIS_URL and LIBOS_REDIS_CLUSTER_NODES are both set/,
    );
  });

  it('makes the topology a cluster of the listed seeds, TLS when they say rediss://', () => {
    const plain = redisSettingsFromEnv({
      LIBOS_REDIS_CLUSTER_NODES: ' 10.0.0.1:7000, redis-b.internal:7001,[::1]:7002 ',
      LIBOS_REDIS_USERNAME: 'app',
    });
    expect(plain).toMatchObject({
      topology: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: 'redis-b.internal', port: 7001 },
        { host: '::1', port: 7002 },
      ],
      tls: false,
      username: 'app',
      password: undefined,
      display: 'cluster 10.0.0.1:7000,redis-b.internal:7001,[::1]:7002',
    });
    const secure = redisSettingsFromEnv({ LIBOS_REDIS_CLUSTER_NODES: 'rediss://a:7000,rediss://b:7000' });
    expect(secure).toMatchObject({
      topology: 'cluster',
      tls: true,
      display: 'cluster rediss://a:7000,b:7000',
    });
  });

  it('takes the password from LIBOS_REDIS_PASSWORD_FILE and never prints it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'libos-redis-cluster-settings-'));
    try {
      const file = join(dir, 'pw');
      await writeFile(file, 'cluster-secret\n');
      const settings = redisSettingsFromEnv({
        LIBOS_REDIS_CLUSTER_NODES: 'a:1',
        LIBOS_REDIS_PASSWORD_FILE: file,
      });
      expect(settings.password?.reveal()).toBe('cluster-secret');
      for (const text of [JSON.stringify(settings), inspect(settings, { depth: 5 })]) {
        expect(text).not.toContain('cluster-secret');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad seeds with a RedisConfigError naming the variable, never quoting a password', () => {
    expect(refused({ LIBOS_REDIS_CLUSTER_NODES: 'a:7000,b' })).toMatch(
      /LIBOS_REDIS_CLUSTER_NODES: "b" is not host:port/,
    );
    expect(refused({ LIBOS_REDIS_CLUSTER_NODES: 'a:70000' })).toMatch(/LIBOS_REDIS_CLUSTER_NODES/);
    expect(refused({ LIBOS_REDIS_CLUSTER_NODES: ' , ' })).toMatch(/names no node/);
    expect(refused({ LIBOS_REDIS_CLUSTER_NODES: 'redis://a:1,rediss://b:1' })).toMatch(
      /TLS is all nodes or none/,
    );
    const withPassword = refused({ LIBOS_REDIS_CLUSTER_NODES: 'redis://:hunter2@a:1' });
    expect(withPassword).toMatch(/LIBOS_REDIS_PASSWORD_FILE/);
    expect(withPassword).not.toContain('hunter2');
    expect(
      refused({ LIBOS_REDIS_CLUSTER_NODES: 'a:1', LIBOS_REDIS_URL: 'redis://:hunter2@elsewhere:6379' }),
    ).toMatch(/LIBOS_REDIS_URL and LIBOS_REDIS_CLUSTER_NODES are both set/);
  });
});
