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
  LIBOS_REDIS_URL: z
    .string()
    .trim()
    .min(1)
    .refine(isRedisAddress, {
      error: 'LIBOS_REDIS_URL must be a redis:// or rediss:// URL, or an absolute unix socket path',
    })
    .optional(),
  /** A file whose content, trimmed, is the password; it wins over a password in the URL. */
  LIBOS_REDIS_PASSWORD_FILE: z.string().trim().min(1).optional(),
  /** An ACL user name (Redis 6+); it wins over a user name in the URL. */
  LIBOS_REDIS_USERNAME: z.string().trim().min(1).optional(),
  /** Sentinel: `host:port,host:port,…` of the sentinels to ask for the primary (instead of LIBOS_REDIS_URL). */
  LIBOS_REDIS_SENTINELS: z.string().trim().min(1).optional(),
  /** Sentinel: the name the sentinels monitor the primary under (`sentinel monitor <name> …`). */
  LIBOS_REDIS_SENTINEL_MASTER: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, {
      error: 'LIBOS_REDIS_SENTINEL_MASTER must be a name of letters, digits, . _ -',
    })
    .optional(),
  /** Sentinel: a file holding the sentinels' own password (`requirepass` in sentinel.conf), if they have one. */
  LIBOS_REDIS_SENTINEL_PASSWORD_FILE: z.string().trim().min(1).optional(),
  /**
   * Replicas that must hold a state change before it is acknowledged (`WAIT N timeout` after each
   * kernel script that writes). 0: acknowledged when the primary has it.
   */
  LIBOS_REDIS_MIN_REPLICAS: z.coerce.number().int().min(0).max(16).default(0),
  /** How long a state change waits for LIBOS_REDIS_MIN_REPLICAS replicas before the caller gets 503. */
  LIBOS_REDIS_REPLICA_TIMEOUT_MS: z.coerce.number().int().min(1).max(60_000).default(1_000),
  /**
   * Redis Cluster: seed nodes `host:port,host:port,…` (each may be written `redis://host:port`, or
   * `rediss://host:port` for TLS to every node). When set, the topology is `cluster` and
   * LIBOS_REDIS_URL must be left unset.
   */
  LIBOS_REDIS_CLUSTER_NODES: z.string().trim().min(1).optional(),
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
    /** Where it came from: the URL, or the file LIBOS_REDIS_PASSWORD_FILE (or …_SENTINEL_PASSWORD_FILE) named. */
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

/**
 * How many replicas must hold a state change before it is acknowledged (LIBOS_REDIS_MIN_REPLICAS),
 * and how long to wait for them (LIBOS_REDIS_REPLICA_TIMEOUT_MS). The kernel WAITs after each
 * script that writes; `replicas: 0` means no WAIT.
 */
export interface RedisReplication {
  readonly replicas: number;
  readonly timeoutMs: number;
}

/** One Redis server. */
export interface StandaloneRedisSettings {
  readonly topology: 'standalone';
  readonly endpoint: RedisEndpoint;
  readonly username: string | undefined;
  readonly password: RedisPassword | undefined;
  /** The address for logs and error messages: the URL without its password, or the socket path. */
  readonly display: string;
  readonly replication: RedisReplication;
}

/** A server's address: a sentinel's, or a Redis Cluster's seed node. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}
/** One sentinel's address. */
export type SentinelAddress = HostPort;

/** One seed node of a Redis Cluster. */
export type ClusterNode = HostPort;

/** A Redis Cluster, reached through any of its seed nodes (the client learns the rest). */
export interface ClusterRedisSettings {
  readonly topology: 'cluster';
  readonly nodes: readonly ClusterNode[];
  /** TLS to every node (the seeds were written `rediss://`). */
  readonly tls: boolean;
  readonly username: string | undefined;
  readonly password: RedisPassword | undefined;
  /** The seeds for logs and error messages, e.g. `cluster 10.0.0.1:7000,10.0.0.2:7000`. */
  readonly display: string;
  /** Always none: WAIT answers for one node's replicas, and a Cluster's writes go to many. */
  readonly replication: RedisReplication;
}

/**
 * A primary and its replicas watched by Sentinel: the client asks the sentinels which server is
 * the primary (`name`), checks that it is one, and asks again after a failover.
 */
export interface SentinelRedisSettings {
  readonly topology: 'sentinel';
  readonly sentinels: readonly SentinelAddress[];
  /** The name the sentinels monitor the primary under. */
  readonly master: string;
  /** The data servers' user and password (LIBOS_REDIS_USERNAME, LIBOS_REDIS_PASSWORD_FILE). */
  readonly username: string | undefined;
  readonly password: RedisPassword | undefined;
  /** The sentinels' own password (LIBOS_REDIS_SENTINEL_PASSWORD_FILE), if they have one. */
  readonly sentinelPassword: RedisPassword | undefined;
  /** `sentinel <name> via host:port,…`, for logs and error messages. */
  readonly display: string;
  readonly replication: RedisReplication;
}

/**
 * How to reach Redis, a union by `topology`: one server (LIBOS_REDIS_URL), Sentinel
 * (LIBOS_REDIS_SENTINELS, LIBOS_REDIS_SENTINEL_MASTER) or a Redis Cluster (LIBOS_REDIS_CLUSTER_NODES). `redisSettings` picks the member,
 * `createRedis` builds the client; the parts never look at the topology.
 */
export type RedisSettings = StandaloneRedisSettings | SentinelRedisSettings | ClusterRedisSettings;

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

function readPasswordFile(path: string, variable = 'LIBOS_REDIS_PASSWORD_FILE'): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new RedisConfigError(`${variable}: cannot read ${path} (${code})`);
  }
  const password = text.trim();
  if (password === '') throw new RedisConfigError(`${variable}: ${path} is empty`);
  return password;
}

function passwordFromFile(path: string | undefined, variable?: string): RedisPassword | undefined {
  return path === undefined
    ? undefined
    : new RedisPassword(readPasswordFile(path, variable), { kind: 'file', path });
}

function replicationOf(env: RedisEnv): RedisReplication {
  return { replicas: env.LIBOS_REDIS_MIN_REPLICAS, timeoutMs: env.LIBOS_REDIS_REPLICA_TIMEOUT_MS };
}

/** One server, from LIBOS_REDIS_URL (default `redis://127.0.0.1:6379`). */
export function standaloneSettings(env: RedisEnv): StandaloneRedisSettings {
  const url = env.LIBOS_REDIS_URL ?? DEFAULT_REDIS_URL;
  const { endpoint, username, password } = endpointOf(url);
  const secret =
    passwordFromFile(env.LIBOS_REDIS_PASSWORD_FILE) ??
    (password !== undefined ? new RedisPassword(password, { kind: 'url' }) : undefined);
  return {
    topology: 'standalone',
    endpoint,
    username: env.LIBOS_REDIS_USERNAME ?? username,
    password: secret,
    display: redactRedisUrl(url),
    replication: replicationOf(env),
  };
}

/** `host:port` (a bracketed IPv6 host allowed); the port is required. */
function sentinelAddress(text: string): SentinelAddress {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  const host = match?.[1] ?? match?.[2];
  if (!match || !host || port < 1 || port > 65535) {
    throw new RedisConfigError(`LIBOS_REDIS_SENTINELS: '${text}' is not host:port`);
  }
  return { host, port };
}

/** Sentinel, from LIBOS_REDIS_SENTINELS and LIBOS_REDIS_SENTINEL_MASTER (both required). */
export function sentinelSettings(env: RedisEnv): SentinelRedisSettings {
  if (env.LIBOS_REDIS_URL !== undefined) {
    throw new RedisConfigError(
      'LIBOS_REDIS_URL and LIBOS_REDIS_SENTINELS are both set: with Sentinel the sentinels name the primary; unset LIBOS_REDIS_URL',
    );
  }
  const master = env.LIBOS_REDIS_SENTINEL_MASTER;
  if (master === undefined) {
    throw new RedisConfigError(
      'LIBOS_REDIS_SENTINELS is set but LIBOS_REDIS_SENTINEL_MASTER (the monitored name) is not',
    );
  }
  const listed = (env.LIBOS_REDIS_SENTINELS ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  if (listed.length === 0) throw new RedisConfigError('LIBOS_REDIS_SENTINELS lists no sentinel');
  const sentinels = listed.map(sentinelAddress);
  return {
    topology: 'sentinel',
    sentinels,
    master,
    username: env.LIBOS_REDIS_USERNAME,
    password: passwordFromFile(env.LIBOS_REDIS_PASSWORD_FILE),
    sentinelPassword: passwordFromFile(
      env.LIBOS_REDIS_SENTINEL_PASSWORD_FILE,
      'LIBOS_REDIS_SENTINEL_PASSWORD_FILE',
    ),
    display: `sentinel ${master} via ${listed.join(',')}`,
    replication: replicationOf(env),
  };
}

/** Settings from variables already checked by `redisEnvSchema`; reads the password files. */
export function redisSettings(env: RedisEnv): RedisSettings {
  if (env.LIBOS_REDIS_SENTINELS !== undefined && env.LIBOS_REDIS_CLUSTER_NODES !== undefined) {
    throw new RedisConfigError(
      'LIBOS_REDIS_SENTINELS and LIBOS_REDIS_CLUSTER_NODES are both set: choose one topology',
    );
  }
  if (env.LIBOS_REDIS_SENTINELS !== undefined) return sentinelSettings(env);
  if (env.LIBOS_REDIS_CLUSTER_NODES !== undefined) return clusterSettings(env, env.LIBOS_REDIS_CLUSTER_NODES);
  if (env.LIBOS_REDIS_SENTINEL_MASTER !== undefined || env.LIBOS_REDIS_SENTINEL_PASSWORD_FILE !== undefined) {
    throw new RedisConfigError(
      'LIBOS_REDIS_SENTINEL_MASTER is set but LIBOS_REDIS_SENTINELS (host:port,…) is not',
    );
  }
  return standaloneSettings(env);
}

const CLUSTER_NODE = /^(?:(rediss?):\/\/)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/i;

/**
 * LIBOS_REDIS_CLUSTER_NODES: `host:port` seeds, comma-separated, each optionally `redis://` or
 * `rediss://` (all alike). Credentials come only from LIBOS_REDIS_PASSWORD_FILE and
 * LIBOS_REDIS_USERNAME: a seed with user info is refused, so no password sits in this variable.
 */
function clusterSettings(env: RedisEnv, list: string): ClusterRedisSettings {
  if (env.LIBOS_REDIS_URL !== undefined) {
    throw new RedisConfigError(
      'LIBOS_REDIS_URL and LIBOS_REDIS_CLUSTER_NODES are both set: a Redis Cluster is reached through its nodes; unset LIBOS_REDIS_URL',
    );
  }
  const nodes: ClusterNode[] = [];
  const schemes = new Set<string>();
  for (const raw of list.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    if (entry.includes('@')) {
      throw new RedisConfigError(
        `LIBOS_REDIS_CLUSTER_NODES: a node carries user info (${redactRedisUrl(entry)}); give the password in LIBOS_REDIS_PASSWORD_FILE and the user in LIBOS_REDIS_USERNAME`,
      );
    }
    const match = CLUSTER_NODE.exec(entry);
    const port = Number(match?.[3]);
    if (!match || port < 1 || port > 65_535) {
      throw new RedisConfigError(
        `LIBOS_REDIS_CLUSTER_NODES: ${JSON.stringify(entry)} is not host:port (or redis://host:port, rediss://host:port)`,
      );
    }
    schemes.add((match[1] ?? 'redis').toLowerCase());
    nodes.push({ host: (match[2] as string).replace(/^\[|\]$/g, ''), port });
  }
  if (nodes.length === 0) throw new RedisConfigError('LIBOS_REDIS_CLUSTER_NODES names no node');
  if (schemes.size > 1) {
    throw new RedisConfigError(
      'LIBOS_REDIS_CLUSTER_NODES mixes redis:// and rediss://: TLS is all nodes or none',
    );
  }
  if (env.LIBOS_REDIS_MIN_REPLICAS > 0) {
    throw new RedisConfigError(
      'LIBOS_REDIS_MIN_REPLICAS is not supported on a Redis Cluster (WAIT answers for one node, and a change may touch several); leave it 0',
    );
  }
  const tls = schemes.has('rediss');
  return {
    topology: 'cluster',
    nodes,
    tls,
    username: env.LIBOS_REDIS_USERNAME,
    password: passwordFromFile(env.LIBOS_REDIS_PASSWORD_FILE),
    replication: { replicas: 0, timeoutMs: env.LIBOS_REDIS_REPLICA_TIMEOUT_MS },
    display: `cluster ${tls ? 'rediss://' : ''}${nodes.map((n) => `${n.host.includes(':') ? `[${n.host}]` : n.host}:${n.port}`).join(',')}`,
  };
}

/**
 * How to reach Redis, from LIBOS_REDIS_URL (default `redis://127.0.0.1:6379`),
 * LIBOS_REDIS_SENTINELS or LIBOS_REDIS_CLUSTER_NODES, with LIBOS_REDIS_PASSWORD_FILE and
 * LIBOS_REDIS_USERNAME. Throws a `RedisConfigError` naming every bad variable; the password files
 * are read here, once.
 */
export function redisSettingsFromEnv(env: Readonly<Record<string, unknown>> = process.env): RedisSettings {
  const parsed = redisEnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new RedisConfigError(`redis configuration: ${problems.join('; ')}`);
  }
  return redisSettings(parsed.data);
}
