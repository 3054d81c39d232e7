import { setMaxListeners } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import swagger from '@fastify/swagger';
import type { RedisClient } from '@libos/kernel';
import { Kernel } from '@libos/kernel';
import { jsonValueSchema } from '@libos/protocol';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
  LogController,
  type RawServerDefault,
} from 'fastify';
import {
  createJsonSchemaTransform,
  createJsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
} from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { z } from 'zod';
import { jsonlArchive } from './archive.js';
import { AdminAuth } from './auth.js';
import { guardBody } from './body-guard.js';
import { BOARD_PATH, type BullBoard, launchJobRedirect, mountBullBoard } from './bull-board.js';
import { CallBudget } from './call-budget.js';
import type { CoordinatorConfig } from './config.js';
import { connectionLimit, openFilesLimit } from './connection-limit.js';
import { ConsoleSessions } from './console-sessions.js';
import { GcSweeper } from './gc-sweeper.js';
import { HttpRefusal, sendError, sendFrameworkError, writeClientError } from './http-errors.js';
import { Launcher } from './launcher.js';
import { MemoryGuard } from './memory-guard.js';
import { createMetrics, type Metrics } from './metrics.js';
import { adminRoutes } from './routes/admin.js';
import { consoleAssetsDir, consoleRoutes } from './routes/console.js';
import { logRoutes } from './routes/logs.js';
import { opsRoutes } from './routes/ops.js';
import { retentionRoutes } from './routes/retention.js';
import { toolRoutes } from './routes/tools.js';

/**
 * Schemas named in `/openapi.json`'s components. A recursive schema (JSON values) must be named:
 * unnamed, its self-reference points at a component the document never defines.
 */
const openApiSchemas = z.registry<{ id: string }>();
openApiSchemas.add(jsonValueSchema, { id: 'JsonValue' });

export interface ServerParts {
  app: FastifyInstance;
  kernel: Kernel;
  launcher: Launcher;
  metrics: Metrics;
  /** Aborted at shutdown: open long-polls answer `ready: false` and clients ask again. */
  shutdown: AbortController;
  /** Refuses new work while Redis memory is above its high-water mark. */
  memoryGuard: MemoryGuard;
  /** The retention sweep (started by `startCoordinator`). */
  sweeper: GcSweeper;
}

/** Requests that start new work (new rows, messages or objects in Redis): refused by the memory guard. */
const NEW_WORK = new Set([
  'POST /v1/admin/processes',
  'POST /v1/tools/spawn_child_process',
  'POST /v1/tools/fork_child_process',
  'POST /v1/tools/spawn_children',
  'POST /v1/tools/send_process_message',
  'POST /v1/tools/create_object',
]);

/**
 * The coordinator's HTTP service: a thin layer over the kernel. `redis` serves the kernel;
 * `queueRedis` serves the BullMQ queues (kept apart so queue traffic never delays a transition).
 */
export async function buildServer(
  config: CoordinatorConfig,
  redis: RedisClient,
  queueRedis: RedisClient,
  logger: Logger,
  /** The background loops' (retention sweep) logger: the caller quiets it while Redis is away. */
  loopLogger: Logger = logger,
): Promise<ServerParts> {
  const metrics = createMetrics();
  const launcher = new Launcher(
    queueRedis,
    metrics,
    {
      keepCompleted: config.LIBOS_QUEUE_KEEP_COMPLETED,
      keepCompletedSeconds: config.LIBOS_QUEUE_KEEP_COMPLETED_S,
      keepFailed: config.LIBOS_QUEUE_KEEP_FAILED,
      keepFailedSeconds: config.LIBOS_QUEUE_KEEP_FAILED_S,
      eventsMaxLen: config.LIBOS_QUEUE_EVENTS_MAX,
    },
    config.LIBOS_LAUNCH_SHARDS,
  );
  const shutdown = new AbortController();
  // Each long-poll in flight listens on it (abortOnClose) until its response closes: as many as
  // there are open waits, so Node's warning past 10 listeners would only be noise in the log.
  setMaxListeners(0, shutdown.signal);
  const app = Fastify<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger>({
    loggerInstance: logger,
    // Fastify's two lines per request go at info; two requests per child made them a measurable
    // share of a trivial child's CPU. One line per request, at debug, is logged below instead.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.LIBOS_BODY_LIMIT_BYTES,
    // Clients include children, which are untrusted code. Fastify sets no request timeout, so a
    // body sent a byte at a time held a connection (a descriptor) for as long as the client chose.
    requestTimeout: config.LIBOS_REQUEST_TIMEOUT_MS,
    http: {
      // Node checks headersTimeout ≤ requestTimeout as it makes the server, before Fastify sets the latter.
      requestTimeout: config.LIBOS_REQUEST_TIMEOUT_MS,
      headersTimeout: config.LIBOS_REQUEST_TIMEOUT_MS,
      // Node checks the timeouts every 30 s by default, which would add up to that much.
      connectionsCheckingInterval: Math.min(5_000, Math.ceil(config.LIBOS_REQUEST_TIMEOUT_MS / 4)),
    },
    // Refused below with the error envelope, as every other answer.
    return503OnClosing: false,
    // Router-level and parser-level refusals leave in the error envelope too.
    frameworkErrors: sendFrameworkError,
    clientErrorHandler: writeClientError,
    // `__proto__` is refused by `guardBody` with a message saying why; `constructor` is data.
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
  });
  const maxConnections = connectionLimit(config.LIBOS_MAX_CONNECTIONS, openFilesLimit());
  if (maxConnections !== undefined) app.server.maxConnections = maxConnections;
  const auth = new AdminAuth(config.LIBOS_ADMIN_TOKEN);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler((error, request, reply) => sendError(error, request, reply));
  app.addHook('onRequest', async (request) => {
    if (shutdown.signal.aborted) throw new HttpRefusal('unavailable', 'the coordinator is shutting down');
    // Answered before its body is read: Fastify would read it whole (up to the body limit) for no
    // route, from anyone, with no token asked.
    if (request.is404) throw noRoute(request);
  });
  const memoryGuard = new MemoryGuard(
    redis,
    { highWater: config.LIBOS_REDIS_MEMORY_HIGH_WATER, intervalMs: config.LIBOS_REDIS_MEMORY_CHECK_MS },
    logger,
    metrics,
  );
  app.addHook('onRequest', async (request) => {
    if (memoryGuard.over && NEW_WORK.has(`${request.method} ${request.routeOptions.url}`))
      memoryGuard.check(`${request.method} ${request.routeOptions.url}`);
  });
  app.addHook('preValidation', guardBody);
  app.addHook('onResponse', async (request, reply) => {
    request.log.debug(
      { method: request.method, url: request.url, status: reply.statusCode, ms: reply.elapsedTime },
      'request completed',
    );
  });
  // Reached without the hook above only through reply.callNotFound() (the console's static files).
  app.setNotFoundHandler(async (request) => {
    throw noRoute(request);
  });
  await app.register(swagger, {
    openapi: {
      info: { title: 'libos coordinator', version: '1' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
    transform: createJsonSchemaTransform({ schemaRegistry: openApiSchemas }),
    transformObject: createJsonSchemaTransformObject({ schemaRegistry: openApiSchemas }),
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  let board: BullBoard | undefined;
  await app.register(async (scope) => {
    // Bull Board installs its own error handler, so refusals are answered here, not thrown.
    scope.addHook('onRequest', async (request, reply) => {
      try {
        await auth.check(request);
      } catch (error) {
        reply.header('www-authenticate', 'Basic realm="libos", charset="UTF-8"');
        return sendError(error, request, reply);
      }
    });
    board = await mountBullBoard(scope);
    launchJobRedirect(scope, launcher);
  });
  const showPool = (pool: string) => {
    for (const queue of launcher.queuesOf(pool)) board?.show(queue);
  };
  const kernel = new Kernel({
    redis,
    // LIBOS_REDIS_MIN_REPLICAS: each state change is answered once that many replicas hold it.
    replication: {
      replicas: config.LIBOS_REDIS_MIN_REPLICAS,
      timeoutMs: config.LIBOS_REDIS_REPLICA_TIMEOUT_MS,
    },
    limits: {
      pollMs: config.LIBOS_LONG_POLL_MS,
      retentionMs: config.LIBOS_RETENTION_MS,
      mailboxMax: config.LIBOS_MAILBOX_MAX,
      mailboxMaxBytes: config.LIBOS_MAILBOX_MAX_BYTES,
      treeMailboxBytes: config.LIBOS_TREE_MAILBOX_BYTES,
      treeObjectBytes: config.LIBOS_TREE_OBJECT_BYTES,
      treeMaxNodes: config.LIBOS_TREE_MAX_NODES,
      treeDefaultNodes: Math.min(2_000, config.LIBOS_TREE_MAX_NODES),
      listScanMax: config.LIBOS_LIST_SCAN_MAX,
      spawnBatchMax: config.LIBOS_SPAWN_BATCH_MAX,
      waitChildrenMax: config.LIBOS_WAIT_CHILDREN_MAX,
      terminateBatch: config.LIBOS_TERMINATE_BATCH,
    },
    onLaunch: async (launch) => {
      showPool(launch.pool);
      await launcher.enqueue(launch);
    },
    // A spawn_children batch: one addBulk per pool (one round trip) instead of one add per child.
    onLaunches: async (launches) => {
      for (const launch of launches) showPool(launch.pool);
      await launcher.enqueueMany(launches);
    },
    onError: (error) => logger.warn({ err: error }, 'kernel background error'),
  });
  kernel.wakeHub.onExitWake = (ms) => metrics.wakeLatency.observe(ms / 1000);
  // In Redis beside the kernel's keys: a login holds on every coordinator of this Redis.
  const sessions = new ConsoleSessions(redis, kernel.keys.prefix, {
    ttlMs: config.LIBOS_CONSOLE_SESSION_TTL_MS,
    max: config.LIBOS_CONSOLE_MAX_SESSIONS,
  });
  auth.sessions = sessions;
  await app.register((scope) =>
    adminRoutes(scope, {
      kernel,
      launcher,
      auth,
      pollMs: config.LIBOS_LONG_POLL_MS,
      shutdown: shutdown.signal,
      onPool: showPool,
    }),
  );
  await app.register((scope) =>
    logRoutes(scope, { kernel, auth, shutdown: shutdown.signal, windowMs: config.LIBOS_LONG_POLL_MS }),
  );
  await app.register((scope) =>
    toolRoutes(scope, {
      kernel,
      launcher,
      metrics,
      pollMs: config.LIBOS_LONG_POLL_MS,
      shutdown: shutdown.signal,
      calls: new CallBudget(
        {
          calls: config.LIBOS_CALLS_HELD,
          processCalls: config.LIBOS_PROCESS_CALLS_HELD,
          bytes: config.LIBOS_BODY_BYTES_HELD,
          processBytes: config.LIBOS_PROCESS_BODY_BYTES_HELD,
          bodyLimit: config.LIBOS_BODY_LIMIT_BYTES,
        },
        {
          refused: (limit) => metrics.callRefusals.inc({ limit }),
          held: (calls) => metrics.callsHeld.set(calls),
        },
      ),
    }),
  );
  await app.register((scope) =>
    consoleRoutes(scope, {
      kernel,
      auth,
      sessions,
      assetsDir: config.LIBOS_CONSOLE_DIR ?? consoleAssetsDir(),
      maxStreams: config.LIBOS_CONSOLE_MAX_STREAMS,
      shutdown: shutdown.signal,
    }),
  );
  await app.register((scope) => opsRoutes(scope, { redis, kernel, launcher, metrics }));
  const sweeper = new GcSweeper(kernel, loopLogger, {
    intervalMs: config.LIBOS_GC_INTERVAL_MS,
    metrics,
    ...(config.LIBOS_ARCHIVE_DIR ? { archive: jsonlArchive(config.LIBOS_ARCHIVE_DIR) } : {}),
  });
  await app.register((scope) => retentionRoutes(scope, { sweeper, auth }));

  for (const image of await kernel.admin.listImages().catch(() => [])) showPool(image.spec.pool);
  return { app, kernel, launcher, metrics, shutdown, memoryGuard, sweeper };
}

export { BOARD_PATH };

function noRoute(request: FastifyRequest): HttpRefusal {
  return new HttpRefusal('not_found', `no route ${request.method} ${request.url}`);
}
