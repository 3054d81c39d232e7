import { AdminClient, ProcessClient } from '@libos/sdk';
import { type StartRedisOptions, startRedis, type TestRedis } from '@libos/testkit';
import { pino } from 'pino';
import { coordinatorConfigSchema } from '../src/config.js';
import { type RunningCoordinator, startCoordinator } from '../src/start.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface Harness {
  redis: TestRedis;
  coordinator: RunningCoordinator;
  admin: AdminClient;
  as(token: string): ProcessClient;
  stop(): Promise<void>;
}

/** A real redis-server and an in-process coordinator on a free port. */
export async function startHarness(
  env: Record<string, string> = {},
  redisOptions: StartRedisOptions = {},
): Promise<Harness> {
  const redis = await startRedis(redisOptions);
  const config = coordinatorConfigSchema.parse({
    LIBOS_REDIS_URL: redis.url,
    LIBOS_ADMIN_TOKEN: ADMIN_TOKEN,
    LIBOS_PORT: '0',
    LIBOS_LONG_POLL_MS: '2000',
    ...env,
  });
  const coordinator = await startCoordinator(config, { logger: pino({ level: 'silent' }) });
  return {
    redis,
    coordinator,
    admin: new AdminClient({ url: coordinator.url, adminToken: ADMIN_TOKEN }),
    as: (token) => new ProcessClient({ url: coordinator.url, token }),
    async stop() {
      await coordinator.close();
      await redis.stop();
    },
  };
}

export async function raw(url: string, path: string, init: RequestInit & { token?: string } = {}) {
  const headers: Record<string, string> = { ...(init.headers as Record<string, string>) };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${url}${path}`, { ...init, headers });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: response.status, body, text, headers: response.headers };
}
