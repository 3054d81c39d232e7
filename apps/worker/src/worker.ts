import { Kernel } from '@libos/kernel';
import { type LaunchJob, launchJobSchema, launchQueueName, pidSchema, QUEUE_PREFIX } from '@libos/protocol';
import { createRedis } from '@libos/redis';
import { type IsolationReport, Spawner } from '@libos/sandbox';
import { Worker } from 'bullmq';
import { type Logger, pino } from 'pino';
import { inheritedEnvironment } from './child-env.js';
import type { ChildSignals } from './child-signals.js';
import type { WorkerConfig } from './config.js';
import { createWorkerMetrics, startOpsServer } from './ops-server.js';
import { type AttemptContext, type AttemptSummary, runAttempt } from './run-attempt.js';

export interface StartWorkerOptions {
  logger?: Logger;
  /** The environment children inherit from (minus every `LIBOS_*`); default `process.env`. */
  baseEnv?: NodeJS.ProcessEnv;
}

export interface RunningWorker {
  readonly id: string;
  /** What this worker enforces on its children. */
  readonly isolation: IsolationReport;
  /**
   * Stop taking launches, let running children finish for `shutdownGraceMs`, then cancel the
   * rest through the contract (stdin EOF, their grace, kill), report them, close connections.
   */
  close(): Promise<void>;
}

type Summary = AttemptSummary | { ignored: string };

/**
 * Starts one BullMQ worker per pool on the pool's launch queue. Redis connections: one for
 * kernel commands, the kernel's one subscriber, one shared BullMQ command connection and one
 * blocking connection per pool; none per child.
 */
export async function startWorker(
  config: WorkerConfig,
  options: StartWorkerOptions = {},
): Promise<RunningWorker> {
  // No pino `base`: its `pid` would be the OS pid, while `pid` in launch lines is the process's.
  const log = (options.logger ?? pino({ name: 'libos-worker', level: config.logLevel, base: null })).child({
    worker: config.workerId,
  });
  // The spawner runs every launch in a small process of its own, so this event loop never blocks
  // on a fork. It starts (and probes the host) while Redis connects; `strict` refuses to start on
  // a host that cannot contain, before any launch is taken.
  let metrics: ReturnType<typeof createWorkerMetrics> | undefined;
  const running = new Set<ChildSignals>();
  const spawning = Spawner.start(config.isolation.sandbox, process.env, {
    onFired: (fired) => {
      metrics?.watchdogKills.inc();
      log.warn(
        { attempt_id: fired.id, late_ms: fired.lateMs, killed: fired.killed },
        'lease not renewed in time: the watchdog killed the child',
      );
    },
    onRestart: (reason) => log.error(reason),
  });
  // Kernel commands fail fast when Redis is away; the worker retries what must not be lost.
  const commands = createRedis(config.redis, 'commands', { maxRetriesPerRequest: 2 });
  const queues = createRedis(config.redis, 'queues');
  for (const connection of [commands, queues]) {
    connection.on('error', (error: Error) => log.warn({ err: error.message }, 'redis connection error'));
  }
  let spawner: Spawner;
  try {
    spawner = await spawning;
  } catch (error) {
    for (const connection of [commands, queues]) connection.disconnect();
    throw error;
  }
  log.info({ isolation: spawner.report }, spawner.describe());
  metrics = createWorkerMetrics(spawner.report, () => running.size);
  const kernel = new Kernel({
    redis: commands,
    onError: (error) => log.warn({ err: String(error) }, 'kernel index update failed'),
  });
  const context: AttemptContext = {
    kernel,
    workerId: config.workerId,
    url: config.url,
    leaseMs: config.leaseMs,
    log,
    running,
    inheritedEnv: inheritedEnvironment(options.baseEnv ?? process.env),
    spawner,
    maxResultBytes: config.isolation.maxResultBytes,
  };

  const processJob = async (data: unknown): Promise<Summary> => {
    const parsed = launchJobSchema.safeParse(data);
    if (!parsed.success || !pidSchema.safeParse(parsed.data.pid).success) {
      log.error({ data }, 'a launch job that names no attempt: ignored');
      return { ignored: 'malformed job data' };
    }
    return runAttempt(parsed.data, context);
  };
  // A dead worker's job stalls once its lock lapses; with maxStalledCount 0 BullMQ fails it
  // instead of handing it out again (the kernel's claim would refuse it anyway). The lock is
  // renewed every half of its duration, comfortably more often than it can lapse.
  const lockMs = Math.max(3 * config.leaseMs, 1_000);
  const workers = config.pools.map((pool) => {
    const worker = new Worker<LaunchJob, Summary>(launchQueueName(pool), (job) => processJob(job.data), {
      connection: queues,
      prefix: QUEUE_PREFIX,
      concurrency: config.concurrency,
      maxStalledCount: 0,
      lockDuration: lockMs,
      stalledInterval: lockMs,
      name: config.workerId,
    });
    worker.on('error', (error) => log.error({ pool, err: error.message }, 'queue worker error'));
    worker.on('failed', (job, error) =>
      log.error(
        { pool, job: job?.id, pid: job?.data.pid, attempt: job?.data.attempt, err: error.message },
        'launch job failed (a stalled job of a dead worker, or no claim was possible)',
      ),
    );
    return worker;
  });
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  const ops = config.ops ? await startOpsServer(metrics, config.ops.host, config.ops.port) : undefined;
  log.info(
    { pools: config.pools, concurrency: config.concurrency, lease_ms: config.leaseMs },
    'worker started',
  );

  let closing: Promise<void> | undefined;
  const close = async () => {
    log.info({ running: running.size, grace_ms: config.shutdownGraceMs }, 'closing: taking no new launches');
    const drained = Promise.all(workers.map((worker) => worker.close()));
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([
      drained.then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), config.shutdownGraceMs);
      }),
    ]);
    clearTimeout(timer);
    if (!inTime) {
      log.warn({ running: running.size }, 'shutdown grace over: cancelling children through the contract');
      for (const signals of running) signals.cancel();
      await drained;
    }
    await new Promise((resolve) => (ops ? ops.close(resolve) : resolve(undefined)));
    await spawner.close();
    await kernel.close();
    await Promise.all([queues.quit(), commands.quit()].map((quit) => quit.catch(() => undefined)));
    log.info('worker closed');
  };
  return {
    id: config.workerId,
    isolation: spawner.report,
    close: () => {
      closing ??= close();
      return closing;
    },
  };
}
