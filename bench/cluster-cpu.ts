// Where the cluster's CPU goes: CPU time (user + system, from /proc; the workers' trees from a
// cgroup where one can be made, see lib/cgroup.ts) per trivial sh child, by
// part, while 2 workers × 4 run a batch: the coordinator, the workers, their spawners and
// watchdogs, the children they run, Redis, and this process as the service that spawns and waits.
// The same figures for a bare execa loop of the same children at concurrency 8 come first: the
// gap between the two totals is what the cluster costs per child. A guide for cutting per-child
// work.
// Then the same parts' CPU per second while the cluster is idle (--idle-s, 10).
//   npm run build && node --import tsx --conditions=@libos/source bench/cluster-cpu.ts [--children N] [--idle-s N]
//     [--isolation auto|strict|none]
import { parseArgs } from 'node:util';
import { type Parts, partMeters, spentDuring, startBenchCluster } from './lib/cluster.js';
import { bareLoop, CHILD_SCRIPTS, clusterThroughput, execaChild } from './lib/loops.js';
import { cpuMs } from './lib/proc.js';

const { values } = parseArgs({
  options: {
    children: { type: 'string', default: '400' },
    'idle-s': { type: 'string', default: '10' },
    isolation: { type: 'string', default: 'auto' },
  },
});
const ISOLATION = values.isolation === 'none' ? 'none' : values.isolation === 'strict' ? 'strict' : 'auto';
const N = Number(values.children);
const IDLE_S = Number(values['idle-s']);
const STAMP = CHILD_SCRIPTS.stamp;

/** CPU ms by part while `run` runs: per child, or (`idle`) per second of it. */
async function measure(title: string, parts: Parts, run: () => Promise<void>, idle = false): Promise<void> {
  const started = performance.now();
  const { spent } = await spentDuring(parts, run);
  const seconds = (performance.now() - started) / 1000;
  const [per, unit] = idle ? [seconds, 'second'] : [N, 'child'];
  process.stdout.write(
    `\n${title}: ${idle ? `${seconds.toFixed(1)} s` : `${N} children at ${(N / seconds).toFixed(1)}/s`}\n`,
  );
  let total = 0;
  for (const name of Object.keys(parts)) {
    const share = spent[name]! / per;
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
const cluster = await startBenchCluster({ isolation: ISOLATION });
let meters: Awaited<ReturnType<typeof partMeters>> | undefined;
try {
  await cluster.admin.putImage('stamp', {
    command: 'sh',
    args: [STAMP, '{result_file}'],
    deadline_ms: 30_000,
  });
  meters = await partMeters(cluster);
  const { parts } = meters;
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
  meters?.close();
}
