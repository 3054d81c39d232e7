import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { redactRedisUrl } from './redact.js';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** `redis://…`, `rediss://…` (TLS), or an absolute unix socket path. */
function isRedisAddress(text: string): boolean {
  return /^rediss?:\/\//i.test(text) || text.startsWith('/');
}

/**
 * The environment variables every part reads to reach Redis. Merge `redisEnvSchema.shape` into a
 * part's own env schema to check them with the rest; `redisSettingsFromEnv` turns them into
 * settings. Messages never quote a value (a URL may hold a password).
 */
export const redisEnvSchema = z.object({
  /** A `redis://` or `rediss://` URL (`[user[:password]@]host[:port][/db]`), or a unix socket path. */
  LIBOS_REDIS_URL: z.string().trim().min(1).default(DEFAULT_REDIS_URL).refine(isRedisAddress, {
    error: 'LIBOS_REDIS_URL must be a redis:// or rediss:// URL, or an absolute unix socket path',
  }),
  /** A file whose content, trimmed, is the password; it wins over a password in the URL. */
  LIBOS_REDIS_PASSWORD_FILE: z.string().trim().min(1).optional(),
  /** An ACL user name (Redis 6+); it wins over a user name in the URL. */
  LIBOS_REDIS_USERNAME: z.string().trim().min(1).optional(),
});
export type RedisEnv = z.infer<typeof redisEnvSchema>;

/**
 * A password that does not print itself: `String()`, `JSON.stringify` (so pino) and
 * `util.inspect` show `[redacted]`. Only `reveal()` gives the value, for the client's options.
 */
export class RedisPassword {
  readonly #value: string;

  constructor(
    value: string,
    /** Where it came from: the URL, or the file LIBOS_REDIS_PASSWORD_FILE named. */
    readonly source: { kind: 'url' } | { kind: 'file'; path: string },
  ) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return '[redacted]';
  }

  toJSON(): string {
    return '[redacted]';
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return 'RedisPassword [redacted]';
  }
}

/** Where one Redis server listens. */
export type RedisEndpoint =
  | { kind: 'tcp'; host: string; port: number; tls: boolean; db: number }
  | { kind: 'socket'; path: string };

/** One Redis server (the only topology for now). */
export interface StandaloneRedisSettings {
  readonly topology: 'standalone';
  readonly endpoint: RedisEndpoint;
  readonly username: string | undefined;
  readonly password: RedisPassword | undefined;
  /** The address for logs and error messages: the URL without its password, or the socket path. */
  readonly display: string;
}

/**
 * How to reach Redis. A union by `topology` so that Redis Cluster (LIBOS_REDIS_CLUSTER_NODES) and
 * Sentinel (LIBOS_REDIS_SENTINELS, LIBOS_REDIS_SENTINEL_MASTER) can be added here as members,
 * read by `redisSettings` and built by `createRedis`, without touching the parts.
 */
export type RedisSettings = StandaloneRedisSettings;

/** A setting that cannot be used; the message names the variable and never quotes a secret. */
export class RedisConfigError extends Error {
  override readonly name = 'RedisConfigError';
}

function endpointOf(address: string): { endpoint: RedisEndpoint; username?: string; password?: string } {
  if (address.startsWith('/')) return { endpoint: { kind: 'socket', path: address } };
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    throw new RedisConfigError(`LIBOS_REDIS_URL is not a valid URL (${redactRedisUrl(address)})`);
  }
  const where = redactRedisUrl(address);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!host) throw new RedisConfigError(`LIBOS_REDIS_URL names no host (${where})`);
  if (url.search || url.hash) {
    throw new RedisConfigError(`LIBOS_REDIS_URL: query parameters are not supported (${where})`);
  }
  const dbText = url.pathname.replace(/^\//, '');
  if (dbText !== '' && !/^\d{1,5}$/.test(dbText)) {
    throw new RedisConfigError(`LIBOS_REDIS_URL: the path must be a database number (${where})`);
  }
  const decode = (part: string) => {
    try {
      return decodeURIComponent(part);
    } catch {
      throw new RedisConfigError(`LIBOS_REDIS_URL: bad percent-encoding in its user info (${where})`);
    }
  };
  return {
    endpoint: {
      kind: 'tcp',
      host,
      port: url.port ? Number(url.port) : 6379,
      tls: url.protocol.toLowerCase() === 'rediss:',
      db: dbText === '' ? 0 : Number(dbText),
    },
    ...(url.username ? { username: decode(url.username) } : {}),
    ...(url.password ? { password: decode(url.password) } : {}),
  };
}

function readPasswordFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new RedisConfigError(`LIBOS_REDIS_PASSWORD_FILE: cannot read ${path} (${code})`);
  }
  const password = text.trim();
  if (password === '') throw new RedisConfigError(`LIBOS_REDIS_PASSWORD_FILE: ${path} is empty`);
  return password;
}

/** Settings from variables already checked by `redisEnvSchema`; reads the password file. */
export function redisSettings(env: RedisEnv): RedisSettings {
  const { endpoint, username, password } = endpointOf(env.LIBOS_REDIS_URL);
  const file = env.LIBOS_REDIS_PASSWORD_FILE;
  const secret =
    file !== undefined
      ? new RedisPassword(readPasswordFile(file), { kind: 'file', path: file })
      : password !== undefined
        ? new RedisPassword(password, { kind: 'url' })
        : undefined;
  return {
    topology: 'standalone',
    endpoint,
    username: env.LIBOS_REDIS_USERNAME ?? username,
    password: secret,
    display: redactRedisUrl(env.LIBOS_REDIS_URL),
  };
}

/**
 * How to reach Redis, from LIBOS_REDIS_URL (default `redis://127.0.0.1:6379`),
 * LIBOS_REDIS_PASSWORD_FILE and LIBOS_REDIS_USERNAME. Throws a `RedisConfigError` naming every
 * bad variable; the password file is read here, once.
 */
export function redisSettingsFromEnv(env: Readonly<Record<string, unknown>> = process.env): RedisSettings {
  const parsed = redisEnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new RedisConfigError(`redis configuration: ${problems.join('; ')}`);
  }
  return redisSettings(parsed.data);
}
