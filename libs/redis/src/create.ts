import {
  Cluster,
  type ClusterOptions,
  Redis,
  type RedisOptions,
  type SentinelConnectionOptions,
  SentinelConnector,
} from 'ioredis';
import type {
  ClusterRedisSettings,
  RedisSettings,
  SentinelRedisSettings,
  StandaloneRedisSettings,
} from './settings.js';

/** What the factory makes: one server's client, or a Redis Cluster's (same commands, routed by slot). */
export type RedisClient = Redis | Cluster;

/**
 * What a connection is for; each picks the ioredis options that use needs.
 * - `commands`: ordinary commands; a command fails after 3 retries while Redis is away, and the
 *   caller retries what matters (override `maxRetriesPerRequest` to taste).
 * - `queues`: BullMQ (Queue, Worker, QueueEvents): `maxRetriesPerRequest: null`, which BullMQ
 *   requires so its blocking commands wait through a reconnect.
 * - `subscriber`: pub/sub: no ready check (INFO is refused once subscribed), waits through
 *   reconnects.
 * - `probe`: one try, no reconnects, not connected until `connect()`: "is Redis there and does it
 *   take these credentials?" (see `checkRedis`).
 */
export type RedisPurpose = 'commands' | 'queues' | 'subscriber' | 'probe';

/**
 * How long `disconnect()` waits for a socket to close before destroying it. ioredis' 2 s timer is
 * not unref'd and a socket torn down mid-reconnect never reports its close, so with Redis away
 * every client held a stopping part open 2 s more; a disconnect drops pending commands anyway.
 */
const DISCONNECT_TIMEOUT_MS = 200;

const PURPOSE_OPTIONS: Record<RedisPurpose, RedisOptions> = {
  commands: { maxRetriesPerRequest: 3, disconnectTimeout: DISCONNECT_TIMEOUT_MS },
  queues: { maxRetriesPerRequest: null, disconnectTimeout: DISCONNECT_TIMEOUT_MS },
  subscriber: {
    maxRetriesPerRequest: null,
    enableReadyCheck: false,
    disconnectTimeout: DISCONNECT_TIMEOUT_MS,
  },
  probe: { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null },
};

/** Fields the settings own: an override cannot point a part elsewhere or change its credentials. */
type SettingsFields =
  | 'host'
  | 'port'
  | 'path'
  | 'db'
  | 'username'
  | 'password'
  | 'sentinels'
  | 'name'
  | 'role'
  | 'sentinelPassword'
  | 'sentinelUsername';

/** ioredis options a caller may add or change on top of its purpose's (e.g. `enableAutoPipelining`). */
export type RedisOverrides = Omit<RedisOptions, SettingsFields>;

/** The ioredis options that say where one server is and who we are. */
function standaloneOptions(settings: StandaloneRedisSettings, overrides: RedisOverrides): RedisOptions {
  const { endpoint } = settings;
  const where: RedisOptions =
    endpoint.kind === 'socket'
      ? { path: endpoint.path }
      : {
          host: endpoint.host,
          port: endpoint.port,
          db: endpoint.db,
          ...(endpoint.tls ? { tls: { ...overrides.tls } } : {}),
        };
  return { ...where, ...credentials(settings) };
}

function credentials(settings: RedisSettings): RedisOptions {
  return {
    ...(settings.username === undefined ? {} : { username: settings.username }),
    ...(settings.password === undefined ? {} : { password: settings.password.reveal() }),
  };
}

/**
 * A reply that says this connection reached a server that is no longer the primary: a demoted
 * primary answers `READONLY` to a write. Nothing was written, so reconnecting (which asks the
 * sentinels again) and resending is safe. (`NOREPLICAS`, from a primary short of its
 * min-replicas-to-write, is the primary: the caller gets it as a refusal to retry.)
 */
export function wrongPrimary(error: Error): boolean {
  return /^READONLY\b/.test(error.message);
}

/**
 * ioredis's Sentinel connector, with its failover detector ended when a new connection starts.
 * ioredis replaces the detector only once a new connection is up: while the primary is gone, the
 * detector of the connection that died still listens for `+switch-master`, and when it comes it
 * disconnects the connector, which ends a connection still asking the sentinels for the primary
 * with "Connection is closed." for good (status `end`, no more reconnects). A new attempt has no
 * use for the old connection's detector: this ends it first (ioredis 5.11; `failoverDetector` is
 * private there, hence the cast). `duplicate()` copies the option, so duplicates get it too.
 */
class FailoverSafeSentinelConnector extends SentinelConnector {
  // ioredis passes its own options, which hold the sentinel ones (see `sentinelOptions`).
  constructor(options: unknown) {
    super(options as SentinelConnectionOptions);
  }

  override connect(
    ...args: Parameters<SentinelConnector['connect']>
  ): ReturnType<SentinelConnector['connect']> {
    const own = this as unknown as { failoverDetector: { cleanup(): void } | null };
    own.failoverDetector?.cleanup();
    own.failoverDetector = null;
    return super.connect(...args);
  }
}

/**
 * The ioredis options for Sentinel: ask the sentinels for `master`, connect to it only if it says
 * it is a primary (`role: 'master'`), listen to the sentinels' `+switch-master` to move at once
 * (`failoverDetector`), and reconnect on a reply that says this server is no longer the primary.
 */
function sentinelOptions(settings: SentinelRedisSettings, purpose: RedisPurpose): RedisOptions {
  return {
    Connector: FailoverSafeSentinelConnector,
    sentinels: settings.sentinels.map(({ host, port }) => ({ host, port })),
    name: settings.master,
    role: 'master',
    failoverDetector: purpose !== 'probe',
    ...(purpose === 'probe' ? { sentinelRetryStrategy: () => null } : {}),
    reconnectOnError: (error: Error) => (wrongPrimary(error) ? 2 : false),
    ...(settings.username === undefined ? {} : { username: settings.username }),
    ...(settings.password === undefined ? {} : { password: settings.password.reveal() }),
    ...(settings.sentinelPassword === undefined
      ? {}
      : { sentinelPassword: settings.sentinelPassword.reveal() }),
  };
}

/** A client of the primary that the sentinels name (see `sentinelOptions`). */
export function createSentinel(
  settings: SentinelRedisSettings,
  purpose: RedisPurpose,
  overrides: RedisOverrides = {},
): Redis {
  return new Redis({ ...PURPOSE_OPTIONS[purpose], ...overrides, ...sentinelOptions(settings, purpose) });
}

/** A client of one server. */
export function createStandalone(
  settings: StandaloneRedisSettings,
  purpose: RedisPurpose,
  overrides: RedisOverrides = {},
): Redis {
  return new Redis({ ...PURPOSE_OPTIONS[purpose], ...overrides, ...standaloneOptions(settings, overrides) });
}

/**
 * An ioredis client for `purpose`, reaching Redis as `settings` say (topology, address, TLS,
 * user, password). Every connection of every part is made here, so the parts never look at the
 * topology. `duplicate()` of the client keeps its credentials and topology.
 */
export function createRedis(
  settings: RedisSettings,
  purpose: RedisPurpose,
  overrides: RedisOverrides = {},
): RedisClient {
  switch (settings.topology) {
    case 'standalone':
      return createStandalone(settings, purpose, overrides);
    case 'sentinel':
      return createSentinel(settings, purpose, overrides);
    case 'cluster':
      return createCluster(settings, purpose, overrides);
  }
}

/**
 * The cluster-level options of each purpose (the per-node ones are `PURPOSE_OPTIONS`' in
 * `redisOptions`): a `subscriber` gets sharded subscribers (one connection per master, SSUBSCRIBE
 * routed to the master of the channel's slot); a `probe` does not retry.
 */
const CLUSTER_PURPOSE_OPTIONS: Record<RedisPurpose, ClusterOptions> = {
  commands: {},
  queues: {},
  subscriber: { shardedSubscribers: true, enableReadyCheck: false },
  probe: { lazyConnect: true, clusterRetryStrategy: () => null },
};

/**
 * A Redis Cluster (`topology: 'cluster'`): an ioredis `Cluster` over the seed nodes, reads and
 * writes on masters, the same credentials and TLS for every node it discovers. Sharded pub/sub
 * (SSUBSCRIBE) is on for every purpose, so a `duplicate()` can subscribe to any tree's channel.
 */
export function createCluster(
  settings: ClusterRedisSettings,
  purpose: RedisPurpose,
  overrides: RedisOverrides = {},
): Cluster {
  const { lazyConnect, ...perNode } = { ...PURPOSE_OPTIONS[purpose], ...overrides };
  const redisOptions: RedisOptions = {
    ...perNode,
    ...(settings.tls ? { tls: { ...overrides.tls } } : {}),
    ...credentials(settings),
  };
  return new Cluster(
    settings.nodes.map((node) => ({ host: node.host, port: node.port })),
    {
      scaleReads: 'master',
      shardedSubscribers: true,
      ...(lazyConnect === undefined ? {} : { lazyConnect }),
      ...(overrides.enableAutoPipelining === undefined
        ? {}
        : { enableAutoPipelining: overrides.enableAutoPipelining }),
      ...CLUSTER_PURPOSE_OPTIONS[purpose],
      redisOptions,
      // TLS certificates name hosts: connect by the name the cluster gave, not a resolved address.
      ...(settings.tls ? { dnsLookup: (address, callback) => callback(null, address) } : {}),
    },
  );
}

/** What to do about an error Redis answered, for the message a person reads. */
function hint(settings: RedisSettings, message: string): string {
  if (/NOAUTH|Authentication required/i.test(message)) {
    return settings.password
      ? 'it wants a password, and the one we sent did not count'
      : 'it wants a password: set LIBOS_REDIS_PASSWORD_FILE to a file holding it';
  }
  if (/WRONGPASS|invalid password|invalid username-password/i.test(message)) {
    const from =
      settings.password?.source.kind === 'file'
        ? `the password in ${settings.password.source.path}`
        : 'the password in LIBOS_REDIS_URL';
    return `${from}${settings.username ? ` (user ${settings.username})` : ''} is not accepted`;
  }
  if (
    /ENOENT|EACCES/.test(message) &&
    settings.topology === 'standalone' &&
    settings.endpoint.kind === 'socket'
  ) {
    return 'the socket is not there or not ours to open';
  }
  return '';
}

/**
 * A Redis error as a person should read it: where (the address without a password), what Redis
 * said, and what to do about a missing or refused password. ioredis's own messages name at most
 * a host and port, never the password.
 */
export function describeRedisError(settings: RedisSettings, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const advice = hint(settings, message);
  return `redis at ${settings.display}: ${message}${advice ? ` (${advice})` : ''}`;
}

/**
 * Connects once with a `probe` client and pings; resolves when Redis answers, else throws an
 * error whose message is `describeRedisError`'s (NOAUTH and WRONGPASS come with what to do).
 */
export async function checkRedis(settings: RedisSettings): Promise<void> {
  const client = createRedis(settings, 'probe');
  // A refused AUTH or ready check reaches only the 'error' event; the command then sees just
  // "Connection is closed". Keep the first such error to report it.
  let refused: Error | undefined;
  client.on('error', (error: Error) => {
    refused ??= error;
  });
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    throw new Error(describeRedisError(settings, refused ?? error));
  } finally {
    client.disconnect();
  }
}
