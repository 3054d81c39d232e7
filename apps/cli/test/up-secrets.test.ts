import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedis, redisSettingsFromEnv } from '@libos/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/cluster/redis-server.js';
import { CLI_FROM_SOURCE, childrenOf } from './helpers.js';

/** The operator's admin token, in the environment `libos up` is started with. */
const ADMIN_TOKEN = `operator-admin-token-${process.pid}-0123456789abcdef`;

/** `/proc/<pid>/environ` as name → value. */
function environOf(pid: number): Map<string, string> {
  const entries = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
  return new Map(
    entries.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
}

async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  withinMs = 30_000,
): Promise<T> {
  const until = Date.now() + withinMs;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      if (Date.now() > until) throw error;
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

describe('libos up keeps the admin token and the Redis password away from workers', () => {
  let dir: string;
  let up: ChildProcess;
  let announced: {
    url: string;
    console_url: string;
    admin_token_file: string;
    redis_url: string;
    redis_password_file: string;
  };
  let redisPassword: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'libos-up-'));
    const port = await freePort();
    up = spawn(
      process.execPath,
      [...CLI_FROM_SOURCE, '--dir', dir, '--json', 'up', '--workers', '2', '--port', String(port)],
      {
        env: { ...process.env, LIBOS_ADMIN_TOKEN: ADMIN_TOKEN, LIBOS_LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let stdout = '';
    announced = await new Promise((resolve, reject) => {
      up.stdout!.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        // One JSON document, printed once everything is up.
        try {
          resolve(JSON.parse(stdout));
        } catch {}
      });
      up.once('exit', (code) => reject(new Error(`libos up exited (${code}) before it was up`)));
    });
    redisPassword = (await readFile(join(dir, 'redis-password'), 'utf8')).trim();
  }, 60_000);

  afterAll(async () => {
    if (up) {
      up.kill('SIGTERM');
      await exited(up);
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('gives the parts the password as a file, and every part connects with it', async () => {
    expect(announced.redis_password_file).toBe(join(dir, 'redis-password'));
    expect(redisPassword).toMatch(/^[A-Za-z0-9_-]{43}$/); // 32 random bytes, base64url
    const settings = redisSettingsFromEnv({
      LIBOS_REDIS_URL: announced.redis_url,
      LIBOS_REDIS_PASSWORD_FILE: announced.redis_password_file,
    });
    const redis = createRedis(settings, 'commands');
    try {
      // Both workers' BullMQ consumers are connected (named `…:w:<worker id>`), so they authenticated.
      await eventually('both workers to take launches', async () => {
        const clients = String(await redis.call('CLIENT', 'LIST'));
        return ['embedded-1', 'embedded-2'].every((id) => clients.includes(`:w:${id} `)) ? true : undefined;
      });
    } finally {
      redis.disconnect();
    }
  });

  it('no worker, nor the coordinator, has the admin token or the Redis password in its environment', () => {
    const parts = childrenOf(up.pid!);
    const workers = parts.filter((part) => / worker --id embedded-\d/.test(part.cmdline));
    const coordinator = parts.filter((part) => / coordinator/.test(part.cmdline));
    const redisServer = parts.filter((part) => part.cmdline.startsWith('redis-server'));
    expect(workers).toHaveLength(2);
    expect(coordinator).toHaveLength(1);
    expect(redisServer).toHaveLength(1);
    for (const part of [...workers, ...coordinator, ...redisServer]) {
      const environ = readFileSync(`/proc/${part.pid}/environ`, 'utf8');
      expect(environ).not.toContain(ADMIN_TOKEN);
      expect(environ).not.toContain(redisPassword);
      expect(environ).not.toMatch(/(^|\0)LIBOS_ADMIN_TOKEN=/);
      // Nor on its command line (what `ps` shows).
      expect(part.cmdline).not.toContain(redisPassword);
      expect(part.cmdline).not.toContain(ADMIN_TOKEN);
    }
    for (const worker of workers) {
      const env = environOf(worker.pid);
      expect(env.has('LIBOS_ADMIN_TOKEN_FILE')).toBe(false);
      expect(env.get('LIBOS_REDIS_PASSWORD_FILE')).toBe(join(dir, 'redis-password'));
    }
    const coordinatorEnv = environOf(coordinator[0]!.pid);
    expect(coordinatorEnv.get('LIBOS_ADMIN_TOKEN_FILE')).toBe(join(dir, 'admin-token'));
    expect(coordinatorEnv.get('LIBOS_REDIS_PASSWORD_FILE')).toBe(join(dir, 'redis-password'));
  });

  it('the coordinator took the operator’s admin token from its file', async () => {
    expect((await readFile(announced.admin_token_file, 'utf8')).trim()).toBe(ADMIN_TOKEN);
    const refused = await fetch(`${announced.url}/v1/admin/processes`, {
      headers: { authorization: 'Bearer not-the-token-0123456789' },
    });
    expect(refused.status).toBe(403);
    const allowed = await fetch(`${announced.url}/v1/admin/processes`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(allowed.status).toBe(200);
  });

  it('announces the console, whose login form answers there', async () => {
    expect(announced.console_url).toBe(`${announced.url}/ui`);
    const form = await fetch(announced.console_url);
    expect(form.status).toBe(200);
    expect(await form.text()).toContain('Admin token');
  });

  it('Redis refuses a client without the password on its loopback port', async () => {
    const config = await readFile(join(dir, 'redis', 'redis.conf'), 'utf8');
    const port = Number(/^port (\d+)$/m.exec(config)?.[1]);
    expect(port).toBeGreaterThan(0);
    const anonymous = new Redis({
      host: '127.0.0.1',
      port,
      lazyConnect: true,
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    anonymous.on('error', () => {});
    try {
      await anonymous.connect();
      await expect(anonymous.ping()).rejects.toThrow(/NOAUTH|Authentication required/);
    } finally {
      anonymous.disconnect();
    }
    const authenticated = new Redis({ host: '127.0.0.1', port, password: redisPassword, lazyConnect: true });
    try {
      expect(await authenticated.ping()).toBe('PONG');
    } finally {
      authenticated.disconnect();
    }
  });

  it('keeps the socket in an owner-only directory and the secrets in owner-only files', async () => {
    const mode = async (path: string) => (await stat(path)).mode & 0o777;
    expect(announced.redis_url).toBe(join(dir, 'redis', 'redis.sock'));
    expect(await mode(join(dir, 'redis'))).toBe(0o700);
    expect(await mode(join(dir, 'redis', 'redis.sock'))).toBe(0o700);
    expect(await mode(join(dir, 'redis-password'))).toBe(0o600);
    expect(await mode(join(dir, 'redis', 'redis.conf'))).toBe(0o600);
    expect(await mode(join(dir, 'admin-token'))).toBe(0o600);
    expect(await mode(dir)).toBe(0o700);
  });
});
