// Where the cluster's CPU goes: CPU time (user + system, from /proc) per trivial sh child, by
// part, while 2 workers × 4 run a batch: the coordinator, the workers, their spawners and
// watchdogs, the children they run, Redis, and this process as the service that spawns and waits.
// The same figures for a bare execa loop of the same children at concurrency 8 come first: the
// gap between the two totals is what the cluster costs per child. A guide for cutting per-child
// work.
//   npm run build && node --import tsx --conditions=@libos/source bench/cluster-cpu.ts [--children N]
import { parseArgs } from 'node:util';
import { clusterPids, startBenchCluster } from './lib/cluster.js';
import { bareLoop, CHILD_SCRIPTS, clusterThroughput, execaChild } from './lib/loops.js';
import { commandLine, cpuMs, descendants } from './lib/proc.js';

const { values } = parseArgs({ options: { children: { type: 'string', default: '400' } } });
const N = Number(values.children);
const STAMP = CHILD_SCRIPTS.stamp;

type Parts = Record<string, () => number>;
async function measure(title: string, parts: Parts, run: () => Promise<void>): Promise<void> {
  const before = Object.fromEntries(Object.entries(parts).map(([name, read]) => [name, read()]));
  const started = performance.now();
  await run();
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(`\n${title}: ${N} children at ${(N / seconds).toFixed(1)}/s\n`);
  let total = 0;
  for (const [name, read] of Object.entries(parts)) {
    const perChild = (read() - before[name]!) / N;
    total += perChild;
    process.stdout.write(`  ${name.padEnd(24)} ${perChild.toFixed(2)} ms CPU per child\n`);
  }
  process.stdout.write(`  ${'total'.padEnd(24)} ${total.toFixed(2)} ms CPU per child\n`);
}

const bare = async () => {
  await bareLoop({ command: 'sh', args: [STAMP, '{result_file}'] }, N, 8, execaChild);
};
await bare(); // warm-up
await measure(
  'bare execa loop, concurrency 8',
  { 'loop (this process)': () => cpuMs(process.pid).self, children: () => cpuMs(process.pid).children },
  bare,
);

// As `libos up` runs on one host: Redis over its unix socket.
const cluster = await startBenchCluster();
try {
  const { redis: redisPid, coordinator, workers } = await clusterPids(cluster);
  await cluster.admin.putImage('stamp', {
    command: 'sh',
    args: [STAMP, '{result_file}'],
    deadline_ms: 30_000,
  });
  // A worker launches through long-lived processes of its own (its spawner, the watchdog), which
  // reap the children: their own time is a part, and what every process of a worker's tree reaped
  // is the children's. (A child still running at a reading counts as a helper's until reaped.)
  const helpers = () => workers.flatMap(descendants);
  const isWatchdog = (pid: number) => commandLine(pid).includes('watchdog-process');
  const ownTime = (pids: number[]) => pids.reduce((sum, pid) => sum + cpuMs(pid).self, 0);
  const parts: Parts = {
    coordinator: () => cpuMs(coordinator).self,
    workers: () => workers.reduce((sum, pid) => sum + cpuMs(pid).self, 0),
    'spawners (+ live children)': () => ownTime(helpers().filter((pid) => !isWatchdog(pid))),
    watchdogs: () => ownTime(helpers().filter(isWatchdog)),
    children: () => [...workers, ...helpers()].reduce((sum, pid) => sum + cpuMs(pid).children, 0),
    redis: () => cpuMs(redisPid).self,
    'service (this process)': () => cpuMs(process.pid).self,
  };
  const spawnAndWait = async () => {
    await clusterThroughput(cluster, 'stamp', N);
  };
  await spawnAndWait(); // warm-up
  await measure('cluster, 2 workers × 4', parts, spawnAndWait);
  await measure('cluster, 2 workers × 4 (again)', parts, spawnAndWait);
} finally {
  await cluster.stop();
}
