import { createRedis, describeRedisError, redisSettingsFromEnv } from '@libos/redis';
import { type Logger, pino } from 'pino';
import type { CoordinatorConfig } from './config.js';
import { Reaper } from './reaper.js';
import { buildServer, type ServerParts } from './server.js';

export interface RunningCoordinator extends ServerParts {
  /** The address it listens on, e.g. http://127.0.0.1:7070 */
  url: string;
  reaper: Reaper;
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
  const redis = createRedis(redisSettings, 'commands', {
    maxRetriesPerRequest: 3,
    enableAutoPipelining: true,
  });
  const queueRedis = createRedis(redisSettings, 'queues');
  for (const client of [redis, queueRedis])
    client.on('error', (error) =>
      logger.warn({ err: describeRedisError(redisSettings, error) }, 'redis error'),
    );
  const parts = await buildServer(config, redis, queueRedis, logger);
  const address = await parts.app.listen({ port: config.LIBOS_PORT, host: config.LIBOS_HOST });
  const url = address.replace('[::1]', '127.0.0.1');
  const reaper = new Reaper(parts.kernel, parts.launcher, logger, {
    intervalMs: config.LIBOS_REAPER_INTERVAL_MS,
    relaunchAfterMs: config.LIBOS_RELAUNCH_AFTER_MS,
  });
  reaper.start();
  logger.info({ url }, 'coordinator listening');
  let closing: Promise<void> | undefined;
  return {
    ...parts,
    url,
    reaper,
    close() {
      closing ??= (async () => {
        parts.shutdown.abort(new Error('the coordinator is shutting down'));
        await parts.app.close();
        await reaper.stop();
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
