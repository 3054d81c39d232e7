// Where the cluster's CPU goes: CPU time (user + system, from /proc; the workers' trees from a
// cgroup where one can be made, see lib/cgroup.ts) per trivial sh child, by
// part, while 2 workers × 4 run a batch: the coordinator, the workers, their spawners and
// watchdogs, the children they run, Redis, and this process as the service that spawns and waits.
// The same figures for a bare execa loop of the same children at concurrency 8 come first: the
// gap between the two totals is what the cluster costs per child. A guide for cutting per-child
// work.
// Then the same parts' CPU per second while the cluster is idle (--idle-s, 10).
//   npm run build && node --import tsx --conditions=@libos/source bench/cluster-cpu.ts [--children N] [--idle-s N]
import { parseArgs } from 'node:util';
import { type TreeMeter, treeMeter } from './lib/cgroup.js';
import { clusterPids, startBenchCluster } from './lib/cluster.js';
import { bareLoop, CHILD_SCRIPTS, clusterThroughput, execaChild } from './lib/loops.js';
import { commandLine, cpuMs, descendants } from './lib/proc.js';

const { values } = parseArgs({
  options: { children: { type: 'string', default: '400' }, 'idle-s': { type: 'string', default: '10' } },
});
const N = Number(values.children);
const IDLE_S = Number(values['idle-s']);
const STAMP = CHILD_SCRIPTS.stamp;

type Parts = Record<string, () => number>;
/** CPU ms by part while `run` runs: per child, or (`idle`) per second of it. */
async function measure(title: string, parts: Parts, run: () => Promise<void>, idle = false): Promise<void> {
  const before = Object.fromEntries(Object.entries(parts).map(([name, read]) => [name, read()]));
  const started = performance.now();
  await run();
  const seconds = (performance.now() - started) / 1000;
  const [per, unit] = idle ? [seconds, 'second'] : [N, 'child'];
  process.stdout.write(
    `\n${title}: ${idle ? `${seconds.toFixed(1)} s` : `${N} children at ${(N / seconds).toFixed(1)}/s`}\n`,
  );
  let total = 0;
  for (const [name, read] of Object.entries(parts)) {
    const share = (read() - before[name]!) / per;
    total += share;
    process.stdout.write(`  ${name.padEnd(26)} ${share.toFixed(2)} ms CPU per ${unit}\n`);
  }
  process.stdout.write(`  ${'total'.padEnd(26)} ${total.toFixed(2)} ms CPU per ${unit}\n`);
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
let workersCpu: TreeMeter | undefined;
try {
  const { redis: redisPid, coordinator, workers } = await clusterPids(cluster);
  await cluster.admin.putImage('stamp', {
    command: 'sh',
    args: [STAMP, '{result_file}'],
    deadline_ms: 30_000,
  });
  // A worker launches through long-lived processes of its own (its spawner, the watchdog): their
  // own time is a part each, and the rest of what the workers' trees ran is the children's. (A
  // child running at a reading counts as the spawners' until it ends.)
  const helpers = () => workers.flatMap(descendants);
  const meter = treeMeter('workers', workers);
  workersCpu = meter;
  const isWatchdog = (pid: number) => commandLine(pid).includes('watchdog-process');
  const ownTime = (pids: number[]) => pids.reduce((sum, pid) => sum + cpuMs(pid).self, 0);
  const parts: Parts = {
    coordinator: () => cpuMs(coordinator).self,
    workers: () => workers.reduce((sum, pid) => sum + cpuMs(pid).self, 0),
    'spawners (+ live children)': () => ownTime(helpers().filter((pid) => !isWatchdog(pid))),
    watchdogs: () => ownTime(helpers().filter(isWatchdog)),
    // Everything the workers' trees ran (a cgroup's count) less their own processes' time.
    children: () => meter.ms() - ownTime([...workers, ...helpers()]),
    redis: () => cpuMs(redisPid).self,
    'service (this process)': () => cpuMs(process.pid).self,
  };
  const spawnAndWait = async () => {
    await clusterThroughput(cluster, 'stamp', N);
  };
  await spawnAndWait(); // warm-up
  await measure('cluster, 2 workers × 4', parts, spawnAndWait);
  await measure('cluster, 2 workers × 4 (again)', parts, spawnAndWait);
  // What the cluster costs while it runs nothing (timers, heartbeats, the watchdogs).
  if (IDLE_S > 0) {
    await measure(
      'cluster idle',
      parts,
      () => new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000)),
      true,
    );
  }
} finally {
  await cluster.stop();
  workersCpu?.close();
}
