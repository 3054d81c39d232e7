// The distributed loop, measured: spawn → child start and child exit → wait wake latency through
// a real cluster (redis-server, a coordinator, 2 workers, each its own OS process), and the
// throughput of trivial children on 2 workers as a ratio against a bare execa loop and a bare
// node:child_process.spawn loop of the same children at the same total concurrency, in the same run;
// each round also runs the same children through spawn_children / wait_children (batches of 100).
//   npm run bench:cluster   (builds, then: node --import tsx --conditions=@libos/source bench/cluster.ts)
// The cluster's parts run built, with plain node, as deployed. Two trivial children are measured:
// `sh` (a shell script: the cheapest possible child) and `node` (the TypeScript echo child made
// with serveChild: what a real engine's start-up costs at the least).
// Options: --rounds N (3), --warm-up N (3 unmeasured sh rounds of each side first), --latency N
// (500 samples), --children N (1000 sh) and --node-children N (150) per round, --fsync
// always|everysec (default everysec, as deploy/redis.conf), --redis unix|tcp (default unix: one
// host, as `libos up` runs it; tcp: as parts on other hosts reach Redis), --isolation auto|strict|none
// (default auto: every child in its sandbox; none: to measure what the sandbox costs).
// Writes bench/results/cluster.json and bench/results/cluster.md (cluster-isolation-none.* with
// --isolation none).
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Cluster } from '@libos/e2e';
import { tsChildLaunch } from '@libos/examples';
import { startBenchCluster } from './lib/cluster.js';
import {
  bareLoop,
  CHILD_SCRIPTS,
  clusterBatchThroughput,
  clusterThroughput,
  execaChild,
  spawnChild,
} from './lib/loops.js';

const { values } = parseArgs({
  options: {
    latency: { type: 'string', default: '500' },
    children: { type: 'string', default: '1000' },
    'node-children': { type: 'string', default: '150' },
    concurrency: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '3' },
    'warm-up': { type: 'string', default: '3' },
    fsync: { type: 'string', default: 'everysec' },
    redis: { type: 'string', default: 'unix' },
    isolation: { type: 'string', default: 'auto' },
  },
});
const LATENCY_SAMPLES = Number(values.latency);
// Children per throughput round: node children take ~70 ms of CPU each, so fewer of them.
const CHILDREN = { sh: Number(values.children), node: Number(values['node-children']) };
const PER_WORKER = Number(values.concurrency);
const WORKERS = 2;
const TOTAL_CONCURRENCY = WORKERS * PER_WORKER;
const ROUNDS = Number(values.rounds);
const WARM_UP_ROUNDS = Number(values['warm-up']);
// deploy/redis.conf's policy by default; `--fsync always` measures the stricter one.
const FSYNC = values.fsync === 'always' ? 'always' : 'everysec';
// How the parts reach Redis: its unix socket (as `libos up` runs it), or `--redis tcp` (loopback
// TCP, as parts on other hosts would).
const VIA = values.redis === 'tcp' ? 'tcp' : 'unix';
// How children are contained: `auto` (the default: a sandbox each, as deployed) or `none`, to
// measure what the sandbox costs against the same cluster without it.
const ISOLATION = values.isolation === 'none' ? 'none' : values.isolation === 'strict' ? 'strict' : 'auto';
const STAMP = CHILD_SCRIPTS.stamp;
const CHILD_KINDS: Record<'sh' | 'node', { command: string; args: string[] }> = {
  sh: { command: 'sh', args: [STAMP, '{result_file}'] },
  node: tsChildLaunch('echo', 'built'),
};
type ChildKind = keyof typeof CHILD_KINDS;
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));

const stampOutput = (payload: unknown) => payload as { start_ns: number; end_ns: number };
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
function summary(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
  return {
    n: sorted.length,
    p50: +percentile(sorted, 50).toFixed(2),
    p99: +percentile(sorted, 99).toFixed(2),
    mean: +mean.toFixed(2),
  };
}
const nowNs = () => BigInt(Date.now()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n);
const msBetween = (fromNs: number | bigint, toNs: bigint) => Number(toNs - BigInt(fromNs)) / 1e6;

/** One child at a time: the parent blocks in wait before the child can end. */
async function latencies(cluster: Cluster) {
  const { client } = await cluster.root('latency', {
    goal: 'latency',
    resource_budget: { children: LATENCY_SAMPLES + 10 },
  });
  const toStart: number[] = [];
  const toWake: number[] = [];
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    const spawnedAt = nowNs();
    const child = await client.spawn({ goal: `sample ${i}`, image: 'stamp' });
    const done = await client.wait({ child_pid: child.pid });
    const wokeAt = nowNs();
    if (done.status !== 'exited' || !done.result_oid)
      throw new Error(`sample ${i}: ${JSON.stringify(done.outcome)}`);
    const stamps = stampOutput((await client.readObject({ oid: done.result_oid })).payload);
    toStart.push(msBetween(spawnedAt, BigInt(stamps.start_ns)));
    toWake.push(msBetween(stamps.end_ns, wokeAt));
  }
  return { spawn_to_start_ms: summary(toStart), exit_to_wake_ms: summary(toWake) };
}

const clusterRound = (cluster: Cluster, kind: ChildKind) =>
  clusterThroughput(cluster, `bench-${kind}`, CHILDREN[kind]);
/** The batch tools' round: spawn_children of BATCH children, then one wait_children (all) per batch. */
const BATCH = 100;
const clusterBatchRound = (cluster: Cluster, kind: ChildKind) =>
  clusterBatchThroughput(cluster, `bench-${kind}`, CHILDREN[kind], BATCH);
/** The same children without libos at the same total concurrency: through execa, as the earlier baseline. */
const bareThroughput = (kind: ChildKind) =>
  bareLoop(CHILD_KINDS[kind], CHILDREN[kind], TOTAL_CONCURRENCY, execaChild);
/** Through node:child_process.spawn: what a plain Node service pays. */
const bareSpawnThroughput = (kind: ChildKind) =>
  bareLoop(CHILD_KINDS[kind], CHILDREN[kind], TOTAL_CONCURRENCY, spawnChild);

const cluster = await startBenchCluster({
  workers: WORKERS,
  perWorker: PER_WORKER,
  fsync: FSYNC,
  via: VIA,
  isolation: ISOLATION,
});
try {
  await cluster.admin.putImage('stamp', { ...CHILD_KINDS.sh, deadline_ms: 30_000 });
  for (const kind of Object.keys(CHILD_KINDS) as ChildKind[]) {
    await cluster.admin.putImage(`bench-${kind}`, { ...CHILD_KINDS[kind], deadline_ms: 30_000 });
  }
  // Warm-up, the same for both sides: unmeasured rounds of each, so JIT compilation (four
  // processes on the cluster's side take a few thousand children to settle) and connection
  // set-up are not charged to either. Steady state is what a fleet runs in.
  for (let i = 0; i < WARM_UP_ROUNDS; i++) {
    await bareThroughput('sh');
    await clusterRound(cluster, 'sh');
  }
  const warm = await cluster.root('warm-up', { goal: 'warm-up', resource_budget: { children: 50 } });
  for (let i = 0; i < 20; i++) {
    const child = await warm.client.spawn({ goal: 'w', image: 'stamp' });
    await warm.client.wait({ child_pid: child.pid });
  }

  const latency = await latencies(cluster);
  const rounds: {
    child: ChildKind;
    bare_per_s: number;
    spawn_per_s: number;
    cluster_per_s: number;
    /** The same children through spawn_children / wait_children (batches of BATCH). */
    cluster_batch_per_s: number;
    ratio: number;
    ratio_spawn: number;
    ratio_spawn_batch: number;
  }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const child of Object.keys(CHILD_KINDS) as ChildKind[]) {
      const bare = await bareThroughput(child);
      const bareSpawn = await bareSpawnThroughput(child);
      const viaCluster = await clusterRound(cluster, child);
      const viaBatch = await clusterBatchRound(cluster, child);
      rounds.push({
        child,
        bare_per_s: +bare.toFixed(1),
        spawn_per_s: +bareSpawn.toFixed(1),
        cluster_per_s: +viaCluster.toFixed(1),
        cluster_batch_per_s: +viaBatch.toFixed(1),
        ratio: +(viaCluster / bare).toFixed(3),
        ratio_spawn: +(viaCluster / bareSpawn).toFixed(3),
        ratio_spawn_batch: +(viaBatch / bareSpawn).toFixed(3),
      });
    }
  }
  const meanOf = (child: ChildKind, pick: (r: (typeof rounds)[number]) => number) => {
    const mine = rounds.filter((r) => r.child === child);
    return +(mine.reduce((a, r) => a + pick(r), 0) / mine.length).toFixed(3);
  };
  const ratio = { sh: meanOf('sh', (r) => r.ratio), node: meanOf('node', (r) => r.ratio) };
  const ratioSpawn = { sh: meanOf('sh', (r) => r.ratio_spawn), node: meanOf('node', (r) => r.ratio_spawn) };
  const ratioSpawnBatch = {
    sh: meanOf('sh', (r) => r.ratio_spawn_batch),
    node: meanOf('node', (r) => r.ratio_spawn_batch),
  };
  const report = {
    bench: 'cluster',
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version },
    isolation: ISOLATION,
    setup: `children isolation ${ISOLATION}; redis-server (AOF, appendfsync ${FSYNC}, reached over ${VIA === 'unix' ? 'its unix socket' : 'loopback TCP'}), 1 coordinator, ${WORKERS} workers × concurrency ${PER_WORKER}, built, plain node; latency child: sh bench/children/stamp.sh`,
    latency,
    throughput: {
      children_per_round: CHILDREN,
      total_concurrency: TOTAL_CONCURRENCY,
      rounds,
      ratio,
      ratio_spawn: ratioSpawn,
      batch_size: BATCH,
      ratio_spawn_batch: ratioSpawnBatch,
    },
    targets: { exit_to_wake_p99_ms: 10, throughput_ratio: 0.8 },
  };
  await mkdir(RESULTS, { recursive: true });
  const name = ISOLATION === 'auto' ? 'cluster' : `cluster-isolation-${ISOLATION}`;
  await writeFile(join(RESULTS, `${name}.json`), `${JSON.stringify(report, null, 2)}\n`);
  const md = [
    '| measure | p50 | p99 | mean | n |',
    '| --- | --- | --- | --- | --- |',
    `| spawn → child start (ms) | ${latency.spawn_to_start_ms.p50} | ${latency.spawn_to_start_ms.p99} | ${latency.spawn_to_start_ms.mean} | ${latency.spawn_to_start_ms.n} |`,
    `| child exit → wait wake (ms) | ${latency.exit_to_wake_ms.p50} | ${latency.exit_to_wake_ms.p99} | ${latency.exit_to_wake_ms.mean} | ${latency.exit_to_wake_ms.n} |`,
    '',
    `| child | bare execa loop, concurrency ${TOTAL_CONCURRENCY} (children/s) | bare child_process.spawn loop (children/s) | cluster, ${WORKERS} workers × ${PER_WORKER} (children/s) | cluster, spawn_children × ${BATCH} (children/s) | ÷ execa | ÷ spawn | batch ÷ spawn |`,
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rounds.map(
      (r) =>
        `| ${r.child} | ${r.bare_per_s} | ${r.spawn_per_s} | ${r.cluster_per_s} | ${r.cluster_batch_per_s} | ${r.ratio} | ${r.ratio_spawn} | ${r.ratio_spawn_batch} |`,
    ),
    `| mean sh | | | | | **${ratio.sh}** | **${ratioSpawn.sh}** (target ≥ 0.8) | **${ratioSpawnBatch.sh}** |`,
    `| mean node | | | | | **${ratio.node}** | **${ratioSpawn.node}** (target ≥ 0.8) | **${ratioSpawnBatch.node}** |`,
  ].join('\n');
  await writeFile(join(RESULTS, `${name}.md`), `${md}\n`);
  process.stdout.write(`${md}\n`);
} finally {
  await cluster.stop();
}
