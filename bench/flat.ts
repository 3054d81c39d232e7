// Cost that stays flat: 100, 1,000 and 10,000 trivial children queued at once (all
// spawned through spawn_children in batches before any is waited for), under one root and spread
// over 10 roots, through a cluster as `libos up` runs it (2 workers × 4, children in their
// sandboxes). Each case runs on a fresh cluster warmed up by 200 children under a root of its own,
// so no case inherits another's retained processes; the coordinator's and workers' peak RSS is
// reset (clear_refs) after the warm-up and read after the case.
//   npm run build && node --import tsx --conditions=@libos/source bench/flat.ts [--sizes 100,1000,10000]
// Options: --sizes (100,1000,10000), --roots 1,10, --batch N (256: children per spawn_children
// call, the kernel's default maximum), --warm-up N (200), --isolation auto|none.
// Prints a Markdown table and what grows faster than linearly; writes bench/results/flat.json.
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Cluster } from '@libos/e2e';
import { clusterPids, startBenchCluster } from './lib/cluster.js';
import { CHILD_SCRIPTS, clusterBatchThroughput } from './lib/loops.js';
import { mdRow, runPool } from './lib/pool.js';
import { resetPeakRss, rssMiB } from './lib/proc.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '100,1000,10000' },
    roots: { type: 'string', default: '1,10' },
    batch: { type: 'string', default: '256' },
    'warm-up': { type: 'string', default: '200' },
    isolation: { type: 'string', default: 'auto' },
  },
});
const SIZES = values.sizes.split(',').map(Number);
const ROOTS = values.roots.split(',').map(Number);
const BATCH = Number(values.batch);
const WARM_UP = Number(values['warm-up']);
const ISOLATION = values.isolation === 'none' ? 'none' : 'auto';
const WAIT_MAX = 1_024; // pids one wait_children call names at most (the kernel's default)
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));

interface Case {
  children: number;
  roots: number;
  per_s: number;
  seconds: number;
  /** All spawned (queued) after this long. */
  queued_s: number;
  coordinator_peak_mib: number;
  coordinator_start_mib: number;
  worker_peak_mib: number;
  worker_start_mib: number;
  redis_used_mib_before: number;
  redis_used_mib_after: number;
}

async function redisUsedMiB(cluster: Cluster): Promise<number> {
  const redis = cluster.redisClient();
  try {
    const info = String(await redis.info('memory'));
    return +(Number(/used_memory:(\d+)/.exec(info)?.[1]) / 2 ** 20).toFixed(1);
  } finally {
    redis.disconnect();
  }
}

/** `count` children over `roots` roots: all spawned in batches, then waited for (all) in chunks. */
async function queuedAtOnce(cluster: Cluster, count: number, roots: number) {
  const trees = await Promise.all(
    Array.from({ length: roots }, (_, r) =>
      cluster.root(`flat ${r}`, { goal: `flat ${r}`, resource_budget: { children: count + 10 } }),
    ),
  );
  const share = (r: number) => Math.floor(count / roots) + (r < count % roots ? 1 : 0);
  const batches = trees.flatMap((tree, r) =>
    Array.from({ length: Math.ceil(share(r) / BATCH) }, (_, b) => ({
      tree,
      size: Math.min(BATCH, share(r) - b * BATCH),
    })),
  );
  const started = performance.now();
  const spawned = await runPool(batches.length, 4, async (i) => {
    const { tree, size } = batches[i]!;
    const { children } = await tree.client.spawnChildren({
      children: Array.from({ length: size }, (_, k) => ({ goal: `c${k}`, image: 'flat' })),
    });
    return { tree, pids: children.map((child) => child.pid) };
  });
  const queuedS = (performance.now() - started) / 1000;
  const waits = trees.flatMap((tree) => {
    const pids = spawned.filter((s) => s.tree === tree).flatMap((s) => s.pids);
    return Array.from({ length: Math.ceil(pids.length / WAIT_MAX) }, (_, c) => ({
      tree,
      pids: pids.slice(c * WAIT_MAX, (c + 1) * WAIT_MAX),
    }));
  });
  await Promise.all(
    waits.map(async ({ tree, pids }) => {
      const done = await tree.client.waitChildren({ child_pids: pids, mode: 'all' });
      const failed = done.children.find((one) => one.status !== 'exited');
      if (failed) throw new Error(`child ${failed.child_pid}: ${JSON.stringify(failed.outcome)}`);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    per_s: +(count / seconds).toFixed(1),
    seconds: +seconds.toFixed(1),
    queued_s: +queuedS.toFixed(1),
  };
}

async function runCase(children: number, roots: number): Promise<Case> {
  const cluster = await startBenchCluster({ isolation: ISOLATION });
  try {
    await cluster.admin.putImage('flat', {
      command: 'sh',
      args: [CHILD_SCRIPTS.trivial, '{result_file}'],
      deadline_ms: 600_000,
    });
    if (WARM_UP > 0) await clusterBatchThroughput(cluster, 'flat', WARM_UP);
    const { coordinator, workers } = await clusterPids(cluster);
    const parts = [coordinator, ...workers];
    for (const pid of parts) resetPeakRss(pid);
    const start = parts.map((pid) => rssMiB(pid).rss);
    const redisBefore = await redisUsedMiB(cluster);
    const result = await queuedAtOnce(cluster, children, roots);
    const peaks = parts.map((pid) => rssMiB(pid).peak);
    return {
      children,
      roots,
      ...result,
      coordinator_start_mib: start[0]!,
      coordinator_peak_mib: peaks[0]!,
      worker_start_mib: Math.max(...start.slice(1)),
      worker_peak_mib: Math.max(...peaks.slice(1)),
      redis_used_mib_before: redisBefore,
      redis_used_mib_after: await redisUsedMiB(cluster),
    };
  } finally {
    await cluster.stop();
  }
}

const cases: Case[] = [];
for (const roots of ROOTS) {
  for (const children of SIZES) {
    const one = await runCase(children, roots);
    cases.push(one);
    process.stdout.write(`${JSON.stringify(one)}\n`);
  }
}

const lines = [
  `trivial children (bench/children/trivial.sh) queued at once through spawn_children × ${BATCH}, 2 workers × 4, isolation ${ISOLATION}; load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} CPUs at the end`,
  '',
  mdRow([
    'children',
    'roots',
    'children/s',
    'all queued after (s)',
    'coordinator RSS start → peak (MiB)',
    'worker RSS start → peak (MiB, the larger)',
    'Redis used_memory before → after (MiB)',
  ]),
  mdRow(['---:', '---:', '---:', '---:', '---:', '---:', '---:']),
  ...cases.map((c) =>
    mdRow([
      c.children,
      c.roots,
      c.per_s,
      c.queued_s,
      `${c.coordinator_start_mib} → ${c.coordinator_peak_mib}`,
      `${c.worker_start_mib} → ${c.worker_peak_mib}`,
      `${c.redis_used_mib_before} → ${c.redis_used_mib_after}`,
    ]),
  ),
];
// Faster than linear: a case's cost per child (time, and memory grown) against the next smaller
// size's; the target is 10,000 children within 15 % of the 1,000-child throughput.
const notes: string[] = [];
for (const roots of ROOTS) {
  const mine = cases.filter((c) => c.roots === roots).sort((a, b) => a.children - b.children);
  for (let i = 1; i < mine.length; i++) {
    const [small, large] = [mine[i - 1]!, mine[i]!];
    const rate = large.per_s / small.per_s;
    notes.push(
      `${roots} root(s), ${large.children} vs ${small.children}: children/s × ${rate.toFixed(2)}${rate < 0.85 ? ' (more than 15 % slower)' : ''}`,
    );
    const growth = (c: Case, part: 'coordinator' | 'worker' | 'redis') =>
      part === 'redis'
        ? c.redis_used_mib_after - c.redis_used_mib_before
        : c[`${part}_peak_mib`] - c[`${part}_start_mib`];
    for (const part of ['coordinator', 'worker', 'redis'] as const) {
      const perChild = (c: Case) => (growth(c, part) * 1024) / c.children;
      // Below 1 MiB of growth on either side, RSS noise (a GC, a heap step) decides: nothing to compare.
      if (growth(small, part) < 1 || growth(large, part) < 1) continue;
      const ratio = perChild(large) / Math.max(perChild(small), 1e-9);
      notes.push(
        `  ${part}: ${perChild(small).toFixed(2)} → ${perChild(large).toFixed(2)} KiB grown per child${ratio > 1.5 ? ' (faster than linear)' : ''}`,
      );
    }
  }
}
process.stdout.write(`\n${lines.join('\n')}\n\n${notes.join('\n')}\n`);
await mkdir(RESULTS, { recursive: true });
await writeFile(
  join(RESULTS, 'flat.json'),
  `${JSON.stringify(
    {
      bench: 'flat',
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, node: process.version, loadavg: loadavg() },
      config: { batch: BATCH, warm_up: WARM_UP, isolation: ISOLATION, workers: 2, per_worker: 4 },
      cases,
      notes,
    },
    null,
    2,
  )}\n`,
);
