// A whole cluster on one host for benchmarks, built, with plain node, in one of two shapes:
// `up`, as `libos up` runs it (redis-server with AOF over its unix socket or loopback TCP, parts
// at warn), or `fleet`, as README.md's "Running a fleet" starts the parts (through the CLI's bin,
// default log levels, Redis over loopback TCP with a password file, the admin token as a file).
// Also what the parts spend: CPU by part.
import { randomBytes } from 'node:crypto';
import { Cluster } from '@libos/e2e';
import { treeMeter } from './cgroup.js';
import { commandLine, cpuMs, descendants } from './proc.js';

export type Shape = 'up' | 'fleet';

export interface BenchClusterOptions {
  /** `up` (the default) or `fleet`; see the file's head. */
  shape?: Shape;
  workers?: number;
  /** Children each worker runs at once. */
  perWorker?: number;
  fsync?: 'always' | 'everysec';
  /** How `up` reaches Redis (unix by default); a fleet always uses loopback TCP. */
  via?: 'unix' | 'tcp';
  isolation?: 'auto' | 'strict' | 'none';
  coordinatorEnv?: Record<string, string>;
  /** Added to each worker's environment (`LIBOS_ISOLATION` is `isolation`'s). */
  workerEnv?: Record<string, string>;
  /** Each part's stdout and stderr go to `<logDir>/<part>.log` rather than this terminal. */
  logDir?: string;
}

export function startBenchCluster(options: BenchClusterOptions = {}): Promise<Cluster> {
  process.env.E2E_FROM_DIST = '1';
  const common = {
    workers: options.workers ?? 2,
    concurrency: options.perWorker ?? 4,
    fsync: options.fsync ?? 'everysec',
    workerEnv: { ...options.workerEnv, LIBOS_ISOLATION: options.isolation ?? 'auto' },
    ...(options.logDir === undefined ? {} : { logDir: options.logDir }),
  } as const;
  if (options.shape === 'fleet') {
    if (options.via === 'unix') throw new Error('a fleet reaches Redis over TCP');
    return Cluster.start({
      ...common,
      fleet: true,
      unixSocket: false,
      // The parts read it from a 0600 file (LIBOS_REDIS_PASSWORD_FILE), as the README's do.
      redisPassword: randomBytes(32).toString('hex'),
      coordinatorEnv: { ...options.coordinatorEnv },
    });
  }
  return Cluster.start({
    ...common,
    unixSocket: (options.via ?? 'unix') === 'unix',
    coordinatorEnv: { LIBOS_LOG_LEVEL: 'warn', ...options.coordinatorEnv },
  });
}

/** The pids of a cluster's parts: its redis-server (asked through INFO), coordinator and workers. */
export async function clusterPids(cluster: Cluster) {
  const redis = cluster.redisClient();
  try {
    const info = String(await redis.info('server'));
    return {
      redis: Number(/process_id:(\d+)/.exec(info)?.[1]),
      coordinator: cluster.coordinator?.pid,
      workers: cluster.workers.flatMap((worker) => (worker?.pid === undefined ? [] : [worker.pid])),
    };
  } finally {
    redis.disconnect();
  }
}

/** Readings of CPU ms so far, by part name. */
export type Parts = Record<string, () => number>;

/** The parts `partMeters` reads, in order. */
export const PART_NAMES = [
  'coordinator',
  'workers',
  'spawners (+ live children)',
  'watchdogs',
  'children',
  'redis',
  'service (this process)',
] as const;

/**
 * CPU ms so far of each part of `cluster`: the coordinator, the workers, their spawners and
 * watchdogs, the children they run, Redis, and this process as the service that spawns and waits.
 * The workers' trees are metered through a cgroup where one can be made (`via`), see cgroup.ts.
 * `close()` when done.
 */
export async function partMeters(cluster: Cluster): Promise<{ parts: Parts; via: string; close(): void }> {
  const { redis, coordinator, workers } = await clusterPids(cluster);
  // A worker launches through long-lived processes of its own (its spawner, the watchdog): their
  // own time is a part each, and the rest of what the workers' trees ran is the children's. (A
  // child running at a reading counts as the spawners' until it ends.)
  const helpers = () => workers.flatMap(descendants);
  const meter = treeMeter('workers', workers);
  const isWatchdog = (pid: number) => commandLine(pid).includes('watchdog-process');
  const ownTime = (pids: number[]) => pids.reduce((sum, pid) => sum + cpuMs(pid).self, 0);
  const parts: Record<(typeof PART_NAMES)[number], () => number> = {
    coordinator: () => cpuMs(coordinator).self,
    workers: () => ownTime(workers),
    'spawners (+ live children)': () => ownTime(helpers().filter((pid) => !isWatchdog(pid))),
    watchdogs: () => ownTime(helpers().filter(isWatchdog)),
    // Everything the workers' trees ran (a cgroup's count) less their own processes' time.
    children: () => meter.ms() - ownTime([...workers, ...helpers()]),
    redis: () => cpuMs(redis).self,
    'service (this process)': () => cpuMs(process.pid).self,
  };
  return { parts, via: meter.via, close: () => meter.close() };
}

/** What each of `parts` spent while `run` ran, and `run`'s result. */
export async function spentDuring<T>(
  parts: Parts,
  run: () => Promise<T>,
): Promise<{ result: T; spent: Record<string, number> }> {
  const before = Object.fromEntries(Object.entries(parts).map(([name, read]) => [name, read()]));
  const result = await run();
  const spent = Object.fromEntries(
    Object.entries(parts).map(([name, read]) => [name, read() - before[name]!]),
  );
  return { result, spent };
}
