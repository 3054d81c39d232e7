// The distributed loop, measured: spawn → child start and child exit → wait wake latency through
// a real cluster (redis-server, a coordinator, 2 workers, each its own OS process), and the
// throughput of trivial children on 2 workers as a ratio against a bare execa loop and a bare
// node:child_process.spawn loop of the same children at the same total concurrency, in the same run;
// each round runs the cluster's side three ways: spawn + wait per child through the SDK, the same
// with plain `fetch` against the HTTP API (a service without the SDK), and spawn_children /
// wait_children (batches of 100). Cold and warm: the first 16 children after the parts start
// (before any warm-up), against the same 16-child burst once warm. CPU per child by part
// (coordinator, workers, spawners, watchdogs, children, Redis, this process as the caller) for
// every side, and the bytes the parts log per child.
//   npm run bench:cluster   (builds, then: node --import tsx --conditions=@libos/source bench/cluster.ts)
// The cluster's parts run built, with plain node. Two shapes (`--shape`): `up` (the default), as
// `libos up` runs them (Redis over its unix socket, parts at warn), and `fleet`, as README.md's
// "Running a fleet" starts them (the CLI's bin, default log levels, Redis over loopback TCP with a
// password file, the admin token as a file). Two trivial children: `sh` (a shell script: the
// cheapest possible child) and `node` (the TypeScript echo child made with serveChild: what a
// real engine's start-up costs at the least).
// Options: --shape up|fleet, --rounds N (3), --warm-up N (3 unmeasured sh rounds of each side
// first), --latency N (500 samples), --children N (1000 sh) and --node-children N (150) per round,
// --concurrency N (4 per worker), --fsync always|everysec (default everysec, as deploy/redis.conf),
// --redis unix|tcp (`up` only; default unix: one host, as `libos up` runs it; tcp: as parts on
// other hosts reach Redis), --isolation auto|strict|none (default auto: every child in its
// sandbox; none: to measure what the sandbox costs), --log-level warn|info|debug (`up` only: every
// part at that level instead of warn, to measure what logging costs; writes cluster-log-<level>.*).
// Writes bench/results/cluster[-fleet][-isolation-<mode>][-log-<level>].json and .md.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Cluster } from '@libos/e2e';
import { tsChildLaunch } from '@libos/examples';
import { msBetween, nowNs } from './lib/clock.js';
import { PART_NAMES, type Parts, partMeters, spentDuring, startBenchCluster } from './lib/cluster.js';
import {
  bareLoop,
  CHILD_SCRIPTS,
  clusterBatchThroughput,
  clusterFetchThroughput,
  clusterThroughput,
  execaChild,
  posixSpawnChild,
  spawnChild,
} from './lib/loops.js';
import { mdRow, runPool } from './lib/pool.js';
import { cpuMs } from './lib/proc.js';
import { summarize } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    shape: { type: 'string', default: 'up' },
    latency: { type: 'string', default: '500' },
    children: { type: 'string', default: '1000' },
    'node-children': { type: 'string', default: '150' },
    concurrency: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '3' },
    'warm-up': { type: 'string', default: '3' },
    fsync: { type: 'string', default: 'everysec' },
    redis: { type: 'string' },
    isolation: { type: 'string', default: 'auto' },
    'log-level': { type: 'string' },
  },
});
if (values.shape !== 'up' && values.shape !== 'fleet') throw new Error('--shape is up or fleet');
const SHAPE = values.shape;
if (SHAPE === 'fleet' && values.redis !== undefined && values.redis !== 'tcp') {
  throw new Error(
    '--shape fleet reaches Redis over TCP, as the README fleet does; --redis is for --shape up',
  );
}
const LATENCY_SAMPLES = Number(values.latency);
// Children per throughput round: node children take ~70 ms of CPU each, so fewer of them.
const CHILDREN = { sh: Number(values.children), node: Number(values['node-children']) };
const PER_WORKER = Number(values.concurrency);
const WORKERS = 2;
const TOTAL_CONCURRENCY = WORKERS * PER_WORKER;
const ROUNDS = Number(values.rounds);
const WARM_UP_ROUNDS = Number(values['warm-up']);
// The cold figure: this many children right after the parts start, spawned at once.
const COLD = 16;
// deploy/redis.conf's policy by default; `--fsync always` measures the stricter one.
const FSYNC = values.fsync === 'always' ? 'always' : 'everysec';
// How the parts reach Redis: `up`'s unix socket by default, or loopback TCP (a fleet always).
const VIA = SHAPE === 'fleet' || values.redis === 'tcp' ? 'tcp' : 'unix';
// How children are contained: `auto` (the default: a sandbox each, as deployed) or `none`, to
// measure what the sandbox costs against the same cluster without it.
const ISOLATION = values.isolation === 'none' ? 'none' : values.isolation === 'strict' ? 'strict' : 'auto';
// `up` runs every part at warn, as `libos up` does; --log-level measures what another level costs.
const LOG_LEVELS = ['warn', 'info', 'debug'];
const LOG_LEVEL = values['log-level'];
if (LOG_LEVEL !== undefined && (SHAPE !== 'up' || !LOG_LEVELS.includes(LOG_LEVEL))) {
  throw new Error(
    `--log-level is ${LOG_LEVELS.join('|')}, for --shape up (a fleet keeps each part's default)`,
  );
}
// The workers take it from the harness's E2E_LOG_LEVEL, the coordinator from its own env.
if (LOG_LEVEL !== undefined) process.env.E2E_LOG_LEVEL = LOG_LEVEL;
const STAMP = CHILD_SCRIPTS.stamp;
const CHILD_KINDS: Record<'sh' | 'node', { command: string; args: string[] }> = {
  sh: { command: 'sh', args: [STAMP, '{result_file}'] },
  node: tsChildLaunch('echo', 'built'),
};
type ChildKind = keyof typeof CHILD_KINDS;
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
// The parts' stdout and stderr, one file each, as a log collector would take them.
const LOGS = mkdtempSync(join(tmpdir(), 'libos-bench-logs-'));
const LOG_BYTES = 'log bytes (all parts)';

const stampOutput = (payload: unknown) => payload as { start_ns: number; end_ns: number };
function summary(samples: number[]) {
  const { n, p50, p99, mean } = summarize(samples);
  return { n, p50: +p50.toFixed(2), p99: +p99.toFixed(2), mean: +mean.toFixed(2) };
}
const logBytes = () => readdirSync(LOGS).reduce((sum, name) => sum + statSync(join(LOGS, name)).size, 0);

/**
 * One child at a time, the parent blocking in its wait before the child can end: through
 * spawn_child_process / wait_child_process, and through spawn_children / wait_children with a
 * set of one, sample by sample in turn.
 */
async function latencies(cluster: Cluster) {
  const { client } = await cluster.root('latency', {
    goal: 'latency',
    resource_budget: { children: 2 * LATENCY_SAMPLES + 10 },
  });
  const samples = {
    single: { toStart: [] as number[], toWake: [] as number[] },
    batch: { toStart: [] as number[], toWake: [] as number[] },
  };
  for (let i = 0; i < 2 * LATENCY_SAMPLES; i++) {
    const via = i % 2 === 0 ? 'single' : 'batch';
    const spawnedAt = nowNs();
    let done: Awaited<ReturnType<typeof client.wait>> | undefined;
    if (via === 'single') {
      const child = await client.spawn({ goal: `sample ${i}`, image: 'stamp-latency' });
      done = await client.wait({ child_pid: child.pid });
    } else {
      const { children } = await client.spawnChildren({
        children: [{ goal: `sample ${i}`, image: 'stamp-latency' }],
      });
      done = (await client.waitChildren({ child_pids: children.map((c) => c.pid) })).children[0];
    }
    const wokeAt = nowNs();
    if (done?.status !== 'exited' || !done.result_oid)
      throw new Error(`sample ${i}: ${JSON.stringify(done?.outcome)}`);
    const stamps = stampOutput((await client.readObject({ oid: done.result_oid })).payload);
    samples[via].toStart.push(msBetween(spawnedAt, BigInt(stamps.start_ns)));
    samples[via].toWake.push(msBetween(stamps.end_ns, wokeAt));
  }
  const of = ({ toStart, toWake }: { toStart: number[]; toWake: number[] }) => ({
    spawn_to_start_ms: summary(toStart),
    exit_to_wake_ms: summary(toWake),
  });
  return { wait_child_process: of(samples.single), batch_tools: of(samples.batch) };
}

/**
 * `count` stamp children spawned at once through the SDK (16 in flight, as a throughput round)
 * and waited for: children/s, and each one's spawn → start (queueing behind the 8 slots included).
 */
async function burst(cluster: Cluster, count: number) {
  const { client } = await cluster.root('burst', {
    goal: 'burst',
    resource_budget: { children: count + 10 },
  });
  const spawnedAt: bigint[] = [];
  const started = performance.now();
  const children = await runPool(count, 16, (i) => {
    spawnedAt[i] = nowNs();
    return client.spawn({ goal: `c${i}`, image: 'stamp' });
  });
  const oids = await runPool(count, 64, async (i) => {
    const done = await client.wait({ child_pid: children[i]!.pid });
    if (done.status !== 'exited' || !done.result_oid)
      throw new Error(`child ${i}: ${JSON.stringify(done.outcome)}`);
    return done.result_oid;
  });
  const perS = count / ((performance.now() - started) / 1000);
  const toStart = await runPool(count, 16, async (i) => {
    const stamps = stampOutput((await client.readObject({ oid: oids[i]! })).payload);
    return msBetween(spawnedAt[i]!, BigInt(stamps.start_ns));
  });
  return { per_s: +perS.toFixed(1), samples: toStart, first_ms: +toStart[0]!.toFixed(2) };
}

const clusterRound = (cluster: Cluster, kind: ChildKind) =>
  clusterThroughput(cluster, `bench-${kind}`, CHILDREN[kind]);
/** The same round with plain fetch against the HTTP API, as a service without the SDK. */
const fetchRound = (cluster: Cluster, kind: ChildKind) =>
  clusterFetchThroughput(cluster, `bench-${kind}`, CHILDREN[kind]);
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
/** Through posix_spawn (how libos's runner launches): the cheapest bare loop, with no fork. */
const barePosixSpawnThroughput = (kind: ChildKind) =>
  bareLoop(CHILD_KINDS[kind], CHILDREN[kind], TOTAL_CONCURRENCY, posixSpawnChild);
/** A bare loop's parts: this process and the children it reaped. */
const BARE_PARTS: Parts = {
  'service (this process)': () => cpuMs(process.pid).self,
  children: () => cpuMs(process.pid).children,
};

/** What each side spent, summed over its runs: per child once divided by `children`. */
const spentBySide = new Map<string, { children: number; spent: Record<string, number> }>();
async function metered<T>(side: string, children: number, parts: Parts, run: () => Promise<T>): Promise<T> {
  const { result, spent } = await spentDuring(parts, run);
  const sum = spentBySide.get(side) ?? { children: 0, spent: {} };
  sum.children += children;
  for (const [name, ms] of Object.entries(spent)) sum.spent[name] = (sum.spent[name] ?? 0) + ms;
  spentBySide.set(side, sum);
  return result;
}
const perChild = (side: string) => {
  const sum = spentBySide.get(side)!;
  const of = (name: string) => +((sum.spent[name] ?? 0) / sum.children).toFixed(2);
  // A bare loop's side has only its own process and its children.
  const measured = PART_NAMES.filter((name) => name in sum.spent);
  const cpu: Record<string, number> = Object.fromEntries(measured.map((name) => [name, of(name)]));
  const total = +measured.reduce((a, name) => a + of(name), 0).toFixed(2);
  return {
    children: sum.children,
    cpu_ms: cpu,
    cpu_ms_total: total,
    ...(LOG_BYTES in sum.spent ? { log_bytes: of(LOG_BYTES) } : {}),
  };
};

const cluster = await startBenchCluster({
  shape: SHAPE,
  workers: WORKERS,
  perWorker: PER_WORKER,
  fsync: FSYNC,
  via: VIA,
  isolation: ISOLATION,
  logDir: LOGS,
  ...(LOG_LEVEL === undefined ? {} : { coordinatorEnv: { LIBOS_LOG_LEVEL: LOG_LEVEL } }),
});
let meters: Awaited<ReturnType<typeof partMeters>> | undefined;
try {
  await cluster.admin.putImage('stamp', { ...CHILD_KINDS.sh, deadline_ms: 30_000 });
  // One child at a time: its stamps from bash's clock, so spawn → start ends at its first
  // instruction (stamp.sh forks date(1) first).
  await cluster.admin.putImage('stamp-latency', {
    command: 'bash',
    args: [CHILD_SCRIPTS.stampBash, '{result_file}'],
    deadline_ms: 30_000,
  });
  for (const kind of Object.keys(CHILD_KINDS) as ChildKind[]) {
    await cluster.admin.putImage(`bench-${kind}`, { ...CHILD_KINDS[kind], deadline_ms: 30_000 });
  }
  meters = await partMeters(cluster);
  const parts: Parts = { ...meters.parts, [LOG_BYTES]: logBytes };
  const logAtStart = logBytes();
  // Cold: the first children after the parts start, before anything has warmed them.
  const cold = await metered('cold', COLD, parts, () => burst(cluster, COLD));

  // Warm-up, the same for every side: unmeasured rounds of each, so JIT compilation (four
  // processes on the cluster's side take a few thousand children to settle) and connection
  // set-up are not charged to any. Steady state is what a fleet runs in.
  for (let i = 0; i < WARM_UP_ROUNDS; i++) {
    await bareThroughput('sh');
    await clusterRound(cluster, 'sh');
    await fetchRound(cluster, 'sh');
  }
  const warm = await cluster.root('warm-up', { goal: 'warm-up', resource_budget: { children: 50 } });
  for (let i = 0; i < 20; i++) {
    const child = await warm.client.spawn({ goal: 'w', image: 'stamp' });
    await warm.client.wait({ child_pid: child.pid });
  }

  const latency = await latencies(cluster);
  const warmBursts: Awaited<ReturnType<typeof burst>>[] = [];
  const rounds: {
    child: ChildKind;
    bare_per_s: number;
    spawn_per_s: number;
    posix_spawn_per_s: number;
    cluster_per_s: number;
    /** The same round with plain fetch instead of the SDK. */
    fetch_per_s: number;
    /** The same children through spawn_children / wait_children (batches of BATCH). */
    cluster_batch_per_s: number;
    ratio: number;
    ratio_spawn: number;
    ratio_fetch: number;
    ratio_fetch_spawn: number;
    fetch_over_sdk: number;
    ratio_spawn_batch: number;
    ratio_posix_spawn: number;
  }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    warmBursts.push(await metered('warm', COLD, parts, () => burst(cluster, COLD)));
    for (const child of Object.keys(CHILD_KINDS) as ChildKind[]) {
      const n = CHILDREN[child];
      const bare = await metered(`${child} execa`, n, BARE_PARTS, () => bareThroughput(child));
      const bareSpawn = await metered(`${child} spawn`, n, BARE_PARTS, () => bareSpawnThroughput(child));
      const barePosix = await metered(`${child} posix_spawn`, n, BARE_PARTS, () =>
        barePosixSpawnThroughput(child),
      );
      const viaCluster = await metered(`${child} SDK`, n, parts, () => clusterRound(cluster, child));
      const viaFetch = await metered(`${child} fetch`, n, parts, () => fetchRound(cluster, child));
      const viaBatch = await metered(`${child} batch`, n, parts, () => clusterBatchRound(cluster, child));
      rounds.push({
        child,
        bare_per_s: +bare.toFixed(1),
        spawn_per_s: +bareSpawn.toFixed(1),
        posix_spawn_per_s: +barePosix.toFixed(1),
        cluster_per_s: +viaCluster.toFixed(1),
        fetch_per_s: +viaFetch.toFixed(1),
        cluster_batch_per_s: +viaBatch.toFixed(1),
        ratio: +(viaCluster / bare).toFixed(3),
        ratio_spawn: +(viaCluster / bareSpawn).toFixed(3),
        ratio_fetch: +(viaFetch / bare).toFixed(3),
        ratio_fetch_spawn: +(viaFetch / bareSpawn).toFixed(3),
        fetch_over_sdk: +(viaFetch / viaCluster).toFixed(3),
        ratio_spawn_batch: +(viaBatch / bareSpawn).toFixed(3),
        ratio_posix_spawn: +(viaCluster / barePosix).toFixed(3),
      });
    }
  }
  const meanOf = (child: ChildKind, pick: (r: (typeof rounds)[number]) => number) => {
    const mine = rounds.filter((r) => r.child === child);
    return +(mine.reduce((a, r) => a + pick(r), 0) / mine.length).toFixed(3);
  };
  const both = (pick: (r: (typeof rounds)[number]) => number) => ({
    sh: meanOf('sh', pick),
    node: meanOf('node', pick),
  });
  const ratio = both((r) => r.ratio);
  const ratioSpawn = both((r) => r.ratio_spawn);
  const ratioFetch = both((r) => r.ratio_fetch);
  const ratioFetchSpawn = both((r) => r.ratio_fetch_spawn);
  const fetchOverSdk = both((r) => r.fetch_over_sdk);
  const ratioSpawnBatch = both((r) => r.ratio_spawn_batch);
  const ratioPosixSpawn = both((r) => r.ratio_posix_spawn);
  const coldBurst = { per_s: cold.per_s, spawn_to_start_ms: summary(cold.samples), first_ms: cold.first_ms };
  // The warm bursts' samples pooled; children/s and the first child's latency their means.
  const warmBurst = {
    per_s: +(warmBursts.reduce((a, b) => a + b.per_s, 0) / warmBursts.length).toFixed(1),
    spawn_to_start_ms: summary(warmBursts.flatMap((b) => b.samples)),
    first_ms: +(warmBursts.reduce((a, b) => a + b.first_ms, 0) / warmBursts.length).toFixed(2),
  };
  const sides = [
    'cold',
    'warm',
    ...(Object.keys(CHILD_KINDS) as ChildKind[]).flatMap((kind) =>
      ['execa', 'spawn', 'posix_spawn', 'SDK', 'fetch', 'batch'].map((side) => `${kind} ${side}`),
    ),
  ];
  const cpu = Object.fromEntries(sides.map((side) => [side, perChild(side)]));
  const logs = logLines();

  const shapeText =
    SHAPE === 'fleet'
      ? 'fleet (README "Running a fleet": node apps/cli/bin/libos.js coordinator / worker --pools default, default log levels, Redis over loopback TCP with LIBOS_REDIS_PASSWORD_FILE, LIBOS_ADMIN_TOKEN_FILE)'
      : `up (as libos up: parts at LIBOS_LOG_LEVEL=${LOG_LEVEL ?? 'warn'}, Redis over ${VIA === 'unix' ? 'its unix socket' : 'loopback TCP'})`;
  const report = {
    bench: 'cluster',
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version },
    shape: SHAPE,
    isolation: ISOLATION,
    setup: `shape ${shapeText}; children isolation ${ISOLATION}; redis-server (AOF, appendfsync ${FSYNC}), 1 coordinator, ${WORKERS} workers × concurrency ${PER_WORKER}, built, plain node; latency child: bash bench/children/stamp.bash; burst child: sh bench/children/stamp.sh; CPU of the workers' trees via ${meters.via}`,
    cold: { children: COLD, ...coldBurst, cpu: cpu.cold },
    warm_burst: { rounds: warmBursts.length, ...warmBurst, cpu: cpu.warm },
    latency,
    throughput: {
      children_per_round: CHILDREN,
      total_concurrency: TOTAL_CONCURRENCY,
      rounds,
      ratio,
      ratio_spawn: ratioSpawn,
      ratio_fetch: ratioFetch,
      ratio_fetch_spawn: ratioFetchSpawn,
      fetch_over_sdk: fetchOverSdk,
      batch_size: BATCH,
      ratio_spawn_batch: ratioSpawnBatch,
      ratio_posix_spawn: ratioPosixSpawn,
    },
    cpu_per_child: cpu,
    logs: { ...logs, bytes_at_start: logAtStart },
    targets: { exit_to_wake_p99_ms: 10, throughput_ratio: 0.8 },
  };
  await mkdir(RESULTS, { recursive: true });
  const name = [
    'cluster',
    ...(SHAPE === 'fleet' ? ['fleet'] : []),
    ...(ISOLATION === 'auto' ? [] : [`isolation-${ISOLATION}`]),
    ...(LOG_LEVEL === undefined ? [] : [`log-${LOG_LEVEL}`]),
  ].join('-');
  await writeFile(join(RESULTS, `${name}.json`), `${JSON.stringify(report, null, 2)}\n`);
  const burstRow = (label: string, one: typeof coldBurst, spent: ReturnType<typeof perChild>) =>
    mdRow([
      label,
      one.per_s,
      one.spawn_to_start_ms.p50,
      one.spawn_to_start_ms.p99,
      one.first_ms,
      spent.cpu_ms_total,
      spent.log_bytes ?? '',
    ]);
  const ratioCell = (a: number, b: number) => (b === 0 ? '' : (a / b).toFixed(3));
  const cpuTable = (columns: string[]) => [
    mdRow(['CPU ms per child', ...columns]),
    mdRow(['---', ...columns.map(() => '---:')]),
    ...PART_NAMES.map((part) => mdRow([part, ...columns.map((side) => cpu[side]!.cpu_ms[part] ?? '')])),
    mdRow(['**total**', ...columns.map((side) => `**${cpu[side]!.cpu_ms_total}**`)]),
    mdRow([LOG_BYTES, ...columns.map((side) => cpu[side]!.log_bytes ?? '')]),
  ];
  const md = [
    `shape **${SHAPE}**, isolation ${ISOLATION}: ${report.setup}`,
    '',
    `| ${COLD} stamp children at once (SDK) | children/s | spawn → start p50 (ms) | p99 (ms) | first child (ms) | CPU ms per child | log bytes per child |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    burstRow(`cold: the first ${COLD} after the parts start`, coldBurst, cpu.cold!),
    burstRow(`warm: after warm-up, ${warmBursts.length} bursts`, warmBurst, cpu.warm!),
    mdRow([
      'cold ÷ warm',
      ratioCell(coldBurst.per_s, warmBurst.per_s),
      ratioCell(coldBurst.spawn_to_start_ms.p50, warmBurst.spawn_to_start_ms.p50),
      ratioCell(coldBurst.spawn_to_start_ms.p99, warmBurst.spawn_to_start_ms.p99),
      ratioCell(coldBurst.first_ms, warmBurst.first_ms),
      ratioCell(cpu.cold!.cpu_ms_total, cpu.warm!.cpu_ms_total),
      ratioCell(cpu.cold!.log_bytes ?? 0, cpu.warm!.log_bytes ?? 0),
    ]),
    '',
    '| warm, one child at a time (SDK) | p50 | p99 | mean | n |',
    '| --- | --- | --- | --- | --- |',
    ...(
      [
        ['', latency.wait_child_process],
        [', spawn_children / wait_children', latency.batch_tools],
      ] as const
    ).flatMap(([tools, figures]) => [
      `| spawn → child start (ms)${tools} | ${figures.spawn_to_start_ms.p50} | ${figures.spawn_to_start_ms.p99} | ${figures.spawn_to_start_ms.mean} | ${figures.spawn_to_start_ms.n} |`,
      `| child exit → wait wake (ms)${tools} | ${figures.exit_to_wake_ms.p50} | ${figures.exit_to_wake_ms.p99} | ${figures.exit_to_wake_ms.mean} | ${figures.exit_to_wake_ms.n} |`,
    ]),
    '',
    `| child | bare execa loop, concurrency ${TOTAL_CONCURRENCY} (children/s) | bare child_process.spawn loop (children/s) | bare posix_spawn loop (children/s) | cluster, ${WORKERS} workers × ${PER_WORKER}, SDK (children/s) | cluster, plain fetch (children/s) | cluster, spawn_children × ${BATCH} (children/s) | SDK ÷ execa | SDK ÷ spawn | fetch ÷ execa | fetch ÷ spawn | fetch ÷ SDK | batch ÷ spawn | SDK ÷ posix_spawn |`,
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rounds.map((r) =>
      mdRow([
        r.child,
        r.bare_per_s,
        r.spawn_per_s,
        r.posix_spawn_per_s,
        r.cluster_per_s,
        r.fetch_per_s,
        r.cluster_batch_per_s,
        r.ratio,
        r.ratio_spawn,
        r.ratio_fetch,
        r.ratio_fetch_spawn,
        r.fetch_over_sdk,
        r.ratio_spawn_batch,
        r.ratio_posix_spawn,
      ]),
    ),
    ...(['sh', 'node'] as const).map((kind) =>
      mdRow([
        `mean ${kind}`,
        '',
        '',
        '',
        '',
        '',
        '',
        `**${ratio[kind]}**`,
        `**${ratioSpawn[kind]}** (target ≥ 0.8)`,
        `**${ratioFetch[kind]}**`,
        `**${ratioFetchSpawn[kind]}**`,
        `**${fetchOverSdk[kind]}**`,
        `**${ratioSpawnBatch[kind]}**`,
        `**${ratioPosixSpawn[kind]}**`,
      ]),
    ),
    '',
    ...cpuTable(sides.filter((side) => !side.startsWith('node'))),
    '',
    ...cpuTable(sides.filter((side) => side.startsWith('node'))),
    '',
    `Parts' output over the whole run: ${logs.bytes} bytes, ${logs.lines} lines (${
      Object.entries(logs.by_level)
        .map(([level, n]) => `${level} ${n}`)
        .join(', ') || 'none'
    }).`,
  ].join('\n');
  await writeFile(join(RESULTS, `${name}.md`), `${md}\n`);
  process.stdout.write(`${md}\n`);
} finally {
  await cluster.stop();
  meters?.close();
  rmSync(LOGS, { recursive: true, force: true });
}

/** The parts' output by pino level; lines at warn or above are passed on to stderr (the first 5). */
function logLines() {
  const names: Record<number, string> = {
    10: 'trace',
    20: 'debug',
    30: 'info',
    40: 'warn',
    50: 'error',
    60: 'fatal',
  };
  const byLevel: Record<string, number> = {};
  const loud: string[] = [];
  let lines = 0;
  for (const file of readdirSync(LOGS)) {
    for (const line of readFileSync(join(LOGS, file), 'utf8').split('\n')) {
      if (line === '') continue;
      lines++;
      let level = 'other';
      try {
        level = names[(JSON.parse(line) as { level: number }).level] ?? 'other';
      } catch {
        // not pino's JSON (a stack trace, node's own warnings)
      }
      byLevel[level] = (byLevel[level] ?? 0) + 1;
      if (level !== 'trace' && level !== 'debug' && level !== 'info') loud.push(`${file}: ${line}`);
    }
  }
  for (const line of loud.slice(0, 5)) process.stderr.write(`${line.slice(0, 500)}\n`);
  return { bytes: logBytes(), lines, by_level: byLevel };
}
