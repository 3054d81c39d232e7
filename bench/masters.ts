// Children/s through a whole libos cluster on a Redis Cluster of 1, 2 and 3 masters, at the same
// total worker concurrency (2 workers × 4), and where the CPU went in each (the redis-server
// processes, the coordinator, the workers with the children they reaped).
//   npm run bench:masters   (builds, then: node --import tsx --conditions=@libos/source bench/masters.ts)
// Options: --masters 1,2,3, --rounds N (3), --trees N (8: the load is spread over this many roots,
// since a tree's keys live on one slot), --children N (400 trivial `sh` children per round),
// --concurrency N (4 per worker). The three clusters run side by side and their rounds are
// interleaved (1, 2, 3, 1, 2, 3, …), so a noisy neighbour on a shared host hits them alike.
// Writes bench/results/masters.json.
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Cluster } from '@libos/e2e';
import { type TreeMeter, treeMeter } from './lib/cgroup.js';
import { CHILD_SCRIPTS } from './lib/loops.js';
import { runPool } from './lib/pool.js';
import { cpuTotalMs as cpuMs } from './lib/proc.js';

const { values } = parseArgs({
  options: {
    masters: { type: 'string', default: '1,2,3' },
    rounds: { type: 'string', default: '3' },
    trees: { type: 'string', default: '8' },
    children: { type: 'string', default: '400' },
    concurrency: { type: 'string', default: '4' },
  },
});
const MASTERS = values.masters.split(',').map(Number);
const ROUNDS = Number(values.rounds);
const TREES = Number(values.trees);
const CHILDREN = Number(values.children);
const PER_WORKER = Number(values.concurrency);
const WORKERS = 2;
const STAMP = CHILD_SCRIPTS.stamp;
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
process.env.E2E_FROM_DIST = '1';

interface Parts {
  redis: number;
  coordinator: number;
  workers: number;
}
/** Each cluster's workers with all they start (their sandboxed children too: lib/cgroup.ts). */
const workerMeters = new Map<Cluster, TreeMeter>();
function cpuOf(cluster: Cluster): Parts {
  return {
    redis: (cluster.redis.pids ?? []).reduce((sum, pid) => sum + cpuMs(pid), 0),
    coordinator: cpuMs(cluster.coordinator?.pid),
    workers: workerMeters.get(cluster)?.ms() ?? 0,
  };
}

/** CHILDREN trivial children over TREES roots (so over every master's slots), spawned then waited. */
async function round(cluster: Cluster): Promise<{ per_s: number; cpu_ms_per_child: Parts }> {
  const roots = await Promise.all(
    Array.from({ length: TREES }, (_, t) =>
      cluster.root(`masters ${t}`, { goal: 'masters', resource_budget: { children: CHILDREN } }),
    ),
  );
  const before = cpuOf(cluster);
  const started = performance.now();
  const spawned = await runPool(CHILDREN, 16, async (i) => {
    const root = roots[i % TREES]!;
    return { root, pid: (await root.client.spawn({ goal: `c${i}`, image: 'stamp' })).pid };
  });
  await runPool(spawned.length, 64, async (i) => {
    const { root, pid } = spawned[i]!;
    const done = await root.client.wait({ child_pid: pid });
    if (done.status !== 'exited') throw new Error(`child ${pid}: ${JSON.stringify(done.outcome)}`);
  });
  const seconds = (performance.now() - started) / 1000;
  const after = cpuOf(cluster);
  const per = (part: keyof Parts) => +((after[part] - before[part]) / CHILDREN).toFixed(2);
  return {
    per_s: +(CHILDREN / seconds).toFixed(1),
    cpu_ms_per_child: { redis: per('redis'), coordinator: per('coordinator'), workers: per('workers') },
  };
}

const clusters = new Map<number, Cluster>();
try {
  for (const masters of MASTERS) {
    const cluster = await Cluster.start({
      redisMasters: masters,
      workers: WORKERS,
      concurrency: PER_WORKER,
      coordinatorEnv: { LIBOS_LOG_LEVEL: 'warn' },
    });
    clusters.set(masters, cluster);
    workerMeters.set(
      cluster,
      treeMeter(
        `masters-${masters}`,
        cluster.workers.flatMap((worker) => worker?.pid ?? []),
      ),
    );
    await cluster.admin.putImage('stamp', {
      command: 'sh',
      args: [STAMP, '{result_file}'],
      deadline_ms: 30_000,
    });
    await round(cluster); // warm-up: JIT, connections, subscriptions
  }
  const rounds: { masters: number; round: number; per_s: number; cpu_ms_per_child: Parts }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const masters of MASTERS) {
      const result = await round(clusters.get(masters)!);
      rounds.push({ masters, round: r, ...result });
      process.stdout.write(
        `round ${r} masters ${masters}: ${result.per_s} children/s ${JSON.stringify(result.cpu_ms_per_child)}\n`,
      );
    }
  }
  const lines = [
    `| masters | children/s (mean of ${ROUNDS}) | min–max | CPU ms/child: redis-server (all) | coordinator | workers + children |`,
    '| ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  for (const masters of MASTERS) {
    const mine = rounds.filter((r) => r.masters === masters);
    const rates = mine.map((r) => r.per_s);
    const cpu = (part: keyof Parts) => mean(mine.map((r) => r.cpu_ms_per_child[part])).toFixed(2);
    lines.push(
      `| ${masters} | ${mean(rates).toFixed(1)} | ${Math.min(...rates)}–${Math.max(...rates)} | ${cpu('redis')} | ${cpu('coordinator')} | ${cpu('workers')} |`,
    );
  }
  process.stdout.write(`\n${lines.join('\n')}\n`);
  await mkdir(RESULTS, { recursive: true });
  await writeFile(
    `${RESULTS}masters.json`,
    JSON.stringify(
      { trees: TREES, children: CHILDREN, workers: WORKERS, per_worker: PER_WORKER, rounds },
      null,
      2,
    ),
  );
} finally {
  for (const cluster of clusters.values()) await cluster.stop();
  for (const meter of workerMeters.values()) meter.close();
}
