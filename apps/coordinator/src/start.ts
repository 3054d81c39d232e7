import {
  connectionLost,
  createRedis,
  describeRedisError,
  type RedisClient,
  redisOutageLog,
  redisSettingsFromEnv,
} from '@libos/redis';
import { type Logger, pino } from 'pino';
import type { CoordinatorConfig } from './config.js';
import { Reaper } from './reaper.js';
import { buildServer, type ServerParts } from './server.js';

export interface RunningCoordinator extends ServerParts {
  /** The address it listens on, e.g. http://127.0.0.1:7070 */
  url: string;
  reaper: Reaper;
  /**
   * Resolves, with the reason, if a Redis connection of the coordinator ended for good (ioredis
   * will not reconnect it): it can take no state change any more. Its owner should exit non-zero
   * so that a supervisor starts a fresh one; the coordinator's bin and `libos coordinator` do.
   */
  lost: Promise<string>;
  /** Graceful: stop accepting, answer open long-polls, stop the reaper, close Redis. */
  close(): Promise<void>;
}

export function coordinatorLogger(level: string): Logger {
  return pino({
    level,
    name: 'coordinator',
    // No OS pid in the base: a line's `pid` is the libos process it is about.
    base: null,
    // Tokens never reach a log line, whatever a route logs.
    redact: {
      paths: ['req.headers.authorization', 'token', '*.token', 'headers.authorization'],
      censor: '[secret]',
    },
  });
}

export async function startCoordinator(
  config: CoordinatorConfig,
  options: { logger?: Logger } = {},
): Promise<RunningCoordinator> {
  const logger = options.logger ?? coordinatorLogger(config.LIBOS_LOG_LEVEL);
  // Reads LIBOS_REDIS_PASSWORD_FILE; nothing logs the password (`display` has none).
  const redisSettings = redisSettingsFromEnv(config);
  // Not ioredis's auto-pipelining: it holds a connection's next batch until the one in flight is
  // answered (a round trip of head-of-line blocking), and each batch's objects outlived the young
  // generation. Measured (one coordinator, 64 read_object calls in flight): 15.5k against 13.5k
  // calls/s and 52 against 55 µs of its CPU a call; one child at a time: scavenge time 80-89 ->
  // 50-56 ms over 1,000 children. The kernel pipelines explicitly where a call sends several commands.
  const redis = createRedis(redisSettings, 'commands', { maxRetriesPerRequest: 3 });
  const queueRedis = createRedis(redisSettings, 'queues');
  // While Redis is unreachable every sweep (the reaper's, retention's) fails the same way: the
  // outage's own lines say so, not a stack per sweep.
  const loopLogger = logger.child({});
  const outage = redisOutageLog(
    logger,
    (error) => describeRedisError(redisSettings, error),
    30_000,
    (down) => {
      loopLogger.level = down && logger.levelVal < 50 ? 'error' : logger.level;
    },
  );
  for (const client of [redis, queueRedis]) {
    client.on('error', outage.error);
    client.on('ready', outage.ready);
  }
  const parts = await buildServer(config, redis, queueRedis, logger, loopLogger);
  const address = await parts.app.listen({ port: config.LIBOS_PORT, host: config.LIBOS_HOST });
  const url = address.replace('[::1]', '127.0.0.1');
  const reaper = new Reaper(parts.kernel, parts.launcher, loopLogger, {
    intervalMs: config.LIBOS_REAPER_INTERVAL_MS,
    relaunchAfterMs: config.LIBOS_RELAUNCH_AFTER_MS,
    ...(config.LIBOS_REAPER_HOLD_MS === undefined ? {} : { holdMs: config.LIBOS_REAPER_HOLD_MS }),
  });
  reaper.start();
  await parts.memoryGuard.start();
  parts.sweeper.start();
  logger.info({ url, redis: redisSettings.display }, 'coordinator listening');
  void warnIfTooFewReplicas(redis, redisSettings.replication.replicas, logger);
  let closing: Promise<void> | undefined;
  const lost = connectionLost(
    { commands: redis, queues: queueRedis },
    () => closing !== undefined,
    logger,
    'coordinator',
  );
  return {
    ...parts,
    url,
    reaper,
    lost,
    close() {
      closing ??= (async () => {
        parts.shutdown.abort(new Error('the coordinator is shutting down'));
        await closeServer(parts.app, config.LIBOS_SHUTDOWN_GRACE_MS, logger);
        await reaper.stop();
        parts.memoryGuard.stop();
        await parts.sweeper.stop();
        await parts.kernel.close();
        await parts.launcher.close();
        redis.disconnect();
        queueRedis.disconnect();
        logger.info('coordinator stopped');
      })();
      return closing;
    },
  };
}

/**
 * LIBOS_REDIS_MIN_REPLICAS asks for more replicas than the primary has (a single Redis, or
 * replicas not connected yet): every state change would be refused (503 replication) after the
 * timeout. Said once at start, where the operator looks, rather than only in each refusal.
 */
async function warnIfTooFewReplicas(redis: RedisClient, required: number, logger: Logger): Promise<void> {
  if (required === 0) return;
  try {
    const info = await redis.info('replication');
    const connected = Number(/connected_slaves:(\d+)/.exec(info)?.[1] ?? '0');
    if (connected < required) {
      logger.warn(
        { required, connected },
        'LIBOS_REDIS_MIN_REPLICAS asks for more replicas than the Redis primary has: state changes are refused (503 unavailable/replication) until enough replicas connect',
      );
    }
  } catch {
    // Redis unreachable at start: the outage log says so
  }
}

/**
 * Fastify's close, bounded: requests in flight get `graceMs`, then every connection still open is
 * closed. Node's own close waits for any connection whose request has begun, and a client that
 * went quiet mid-request held a shutdown until that request timed out (73 s with Node's defaults).
 */
async function closeServer(app: ServerParts['app'], graceMs: number, logger: Logger): Promise<void> {
  const forced = setTimeout(() => {
    logger.warn({ grace_ms: graceMs }, 'shutdown grace over: closing the connections still open');
    app.server.closeAllConnections();
  }, graceMs);
  try {
    await app.close();
  } finally {
    clearTimeout(forced);
  }
}
