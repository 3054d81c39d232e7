// A whole cluster as `libos up` runs it on one host, for benchmarks: redis-server with AOF over
// its unix socket (or loopback TCP), a coordinator and workers, built, with plain node.
import { Cluster } from '@libos/e2e';

export interface BenchClusterOptions {
  workers?: number;
  /** Children each worker runs at once. */
  perWorker?: number;
  fsync?: 'always' | 'everysec';
  via?: 'unix' | 'tcp';
  isolation?: 'auto' | 'strict' | 'none';
  coordinatorEnv?: Record<string, string>;
}

export function startBenchCluster(options: BenchClusterOptions = {}): Promise<Cluster> {
  process.env.E2E_FROM_DIST = '1';
  return Cluster.start({
    workers: options.workers ?? 2,
    concurrency: options.perWorker ?? 4,
    fsync: options.fsync ?? 'everysec',
    unixSocket: (options.via ?? 'unix') === 'unix',
    coordinatorEnv: { LIBOS_LOG_LEVEL: 'warn', ...options.coordinatorEnv },
    workerEnv: { LIBOS_ISOLATION: options.isolation ?? 'auto' },
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
