import { readFileSync } from 'node:fs';
import { release, tmpdir } from 'node:os';
import { Kernel } from '@libos/kernel';
import { type LaunchJob, launchJobSchema, launchQueueNames, pidSchema, QUEUE_PREFIX } from '@libos/protocol';
import { connectionLost, createRedis, describeRedisError, redisOutageLog } from '@libos/redis';
import { cgroupJoinFix, type IsolationReport, Spawner } from '@libos/sandbox';
import { type Job, Worker } from 'bullmq';
import { type Logger, pino } from 'pino';
import { inheritedEnvironment } from './child-env.js';
import { DEFAULT_FLUSH_MS } from './child-log.js';
import type { ChildSignals } from './child-signals.js';
import type { WorkerConfig } from './config.js';
import { resultParent } from './isolation.js';
import { endedJobError, LaunchBoard, ProcessEnded } from './job-report.js';
import { createWorkerMetrics, startOpsServer } from './ops-server.js';
import { type AttemptContext, type AttemptSummary, runAttempt } from './run-attempt.js';
import { StrayDrain } from './stray-drain.js';

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
   * Resolves, with the reason, if a Redis connection of the worker ended for good (ioredis will
   * not reconnect it): the worker can no longer report what it runs. Its owner should exit
   * non-zero, as after a crash, so that a supervisor starts a fresh one; the worker's bin and
   * `libos worker` do.
   */
  readonly lost: Promise<string>;
  /**
   * Stop taking launches, let running children finish for `shutdownGraceMs`, then cancel the
   * rest through the contract (stdin EOF, their grace, kill), report them, close connections.
   */
  close(): Promise<void>;
}

type Summary = AttemptSummary | { ignored: string };

/**
 * Starts one BullMQ worker per launch queue of each pool (LIBOS_LAUNCH_SHARDS of them), plus a
 * drainer on a pool's pre-upgrade queue while that has jobs. Redis connections: one for kernel
 * commands, the kernel's one subscriber, one shared BullMQ command connection and one blocking
 * connection per queue worker (pools × shards, + 1 per pool while its old queue drains); none
 * per child.
 */
export async function startWorker(
  config: WorkerConfig,
  options: StartWorkerOptions = {},
): Promise<RunningWorker> {
  // No pino `base`: its `pid` would be the OS pid, while `pid` in launch lines is the process's.
  const log = (options.logger ?? pino({ name: 'libos-worker', level: config.logLevel, base: null })).child({
    worker: config.workerId,
  });
  // BullMQ's concurrency is per queue worker; one limit shared over a pool's shards would need
  // jobs taken and then held waiting (out of reach of idle workers). So the pool's concurrency
  // is divided, rounded up so no shard gets none: at most shards × ceil(concurrency / shards).
  const perQueue = Math.ceil(config.concurrency / config.launchShards);
  // Checked before anything starts: a LIBOS_RESULT_DIR that is not a directory is a bad setting.
  const results = resultParent(config.isolation, config.pools.length * config.launchShards * perQueue);
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
  // Redis away is one line when it goes, one every 30 s while it stays, one when it is back: not
  // a line per retry per connection (nor one per BullMQ retry, below).
  let redisDown = false;
  const outage = redisOutageLog(
    log,
    (error) => describeRedisError(config.redis, error),
    30_000,
    (down) => {
      redisDown = down;
    },
  );
  for (const connection of [commands, queues]) {
    connection.on('error', outage.error);
    connection.on('ready', outage.ready);
  }
  let spawner: Spawner;
  try {
    spawner = await spawning;
  } catch (error) {
    for (const connection of [commands, queues]) connection.disconnect();
    throw error;
  }
  log.info({ isolation: spawner.report, result_dir: results ?? tmpdir() }, spawner.describe());
  const joinFix =
    spawner.report.cgroupVersion === null
      ? undefined
      : cgroupJoinFix(readFileSync('/proc/mounts', 'utf8'), release());
  if (joinFix) {
    log.info(
      { fix: joinFix },
      'cgroup joins may wait for a kernel RCU grace period (one launch in ten took 10-35 ms on a test ' +
        'host): a cgroup2 mount with favordynmods avoids it (README, Running a fleet)',
    );
  }
  metrics = createWorkerMetrics(spawner.report, () => running.size);
  const kernel = new Kernel({
    redis: commands,
    // Claims, renewals and completions too are confirmed by LIBOS_REDIS_MIN_REPLICAS replicas: a
    // claim lost in a failover would let a second worker run the same attempt.
    replication: config.redis.replication,
    limits: { terminateBatch: config.terminateBatch },
    onError: (error) => log.warn({ err: String(error) }, 'kernel background work failed'),
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
    resultParent: results,
    childLog: { ...config.childLog, flushMs: DEFAULT_FLUSH_MS },
    hostedCalls: config.hostedCalls,
  };

  const processJob = async (job: Job<LaunchJob, Summary>): Promise<Summary> => {
    const parsed = launchJobSchema.safeParse(job.data);
    if (!parsed.success || !pidSchema.safeParse(parsed.data.pid).success) {
      log.error({ data: job.data }, 'a launch job that names no attempt: ignored');
      return { ignored: 'malformed job data' };
    }
    const { pid } = parsed.data;
    // Progress is for the board: never awaited on the child's path, and its loss is harmless.
    const board = new LaunchBoard((update) => {
      job.updateProgress({ ...update }).catch((error: unknown) => {
        log.debug({ pid, err: String(error) }, 'job progress not recorded');
      });
    });
    let summary: AttemptSummary;
    try {
      summary = await runAttempt(parsed.data, context, board.update);
    } finally {
      board.close();
    }
    // A process that ended failed or killed is a failed job, with the outcome's reason.
    if (summary.status === 'failed' || summary.status === 'killed' || summary.refused === 'not_runnable') {
      const view = await kernel.admin.getProcess(pid).catch(() => undefined);
      const ended = view ? endedJobError(pid, view.status, view.outcome) : undefined;
      if (ended) throw ended;
    }
    return summary;
  };
  // A dead worker's job stalls once its lock lapses; with maxStalledCount 0 BullMQ fails it
  // instead of handing it out again (the kernel's claim would refuse it anyway). The lock is
  // renewed every half of its duration, comfortably more often than it can lapse.
  const lockMs = Math.max(3 * config.leaseMs, 1_000);
  const consume = (pool: string, name: string, prefix: string) => {
    const worker = new Worker<LaunchJob, Summary>(name, processJob, {
      connection: queues,
      prefix,
      concurrency: perQueue,
      maxStalledCount: 0,
      lockDuration: lockMs,
      stalledInterval: lockMs,
      name: config.workerId,
    });
    worker.on('error', (error) =>
      redisDown
        ? outage.error(error)
        : log.error({ pool, queue: name, err: error.message }, 'queue worker error'),
    );
    worker.on('failed', (job, error) => {
      // the process's own failure, told to the board: the kernel holds it, nothing went wrong here
      if (error instanceof ProcessEnded) return;
      log.error(
        { pool, job: job?.id, pid: job?.data.pid, attempt: job?.data.attempt, err: error.message },
        'launch job failed (a stalled job of a dead worker, or no claim was possible)',
      );
    });
    return worker;
  };
  const workers = config.pools.flatMap((pool) =>
    launchQueueNames(pool, config.launchShards).map((name) => consume(pool, name, QUEUE_PREFIX)),
  );
  const strays = await StrayDrain.start(config.pools, config.launchShards, queues, consume, log);
  await Promise.all([...workers, ...strays.running()].map((worker) => worker.waitUntilReady()));
  const ops = config.ops ? await startOpsServer(metrics, config.ops.host, config.ops.port) : undefined;
  log.info(
    {
      pools: config.pools,
      launch_shards: config.launchShards,
      concurrency_per_queue: perQueue,
      lease_ms: config.leaseMs,
    },
    'worker started',
  );

  let closing: Promise<void> | undefined;
  const lost = connectionLost({ commands, queues }, () => closing !== undefined, log, 'worker');
  const close = async () => {
    log.info({ running: running.size, grace_ms: config.shutdownGraceMs }, 'closing: taking no new launches');
    await strays.close();
    const drained = Promise.all([...workers, ...strays.running()].map((worker) => worker.close()));
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
    if (ops) {
      const closed = new Promise((resolve) => ops.close(resolve));
      // Probes and scrapes have nothing left to wait for; a client gone quiet mid-request would
      // otherwise hold the close for Node's header and request timeouts (over a minute).
      ops.closeAllConnections();
      await closed;
    }
    await spawner.close();
    await kernel.close();
    await Promise.all([queues.quit(), commands.quit()].map((quit) => quit.catch(() => undefined)));
    log.info('worker closed');
  };
  return {
    id: config.workerId,
    isolation: spawner.report,
    lost,
    close: () => {
      closing ??= close();
      return closing;
    },
  };
}
