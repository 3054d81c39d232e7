// Retention under load: many trivial children through a real cluster (redis-server with AOF, a
// coordinator and workers, each its own OS process) under one long-lived caller-driven root with
// a short retention, spawned and waited on by a client pool. Every `--sample-ms` it prints Redis
// `used_memory` and the key count; at the end it waits for the last retention period and the
// sweep, ends the root, and reports memory and keys against the starting point, the throughput
// of the first and last 20% of children, and the slowest Redis commands (SLOWLOG above 1 ms),
// which is where a retention script that held Redis too long would show; and the CPU every part
// spent per child in the first and last 20% (less sensitive than throughput to a busy host).
//   npm run bench:soak -- --children 200000   (builds, then: node --import tsx --conditions=@libos/source bench/soak.ts)
// Options: --children N (200000), --retention-ms N (2000), --concurrency N (client spawn+wait
// pool, 16), --workers N (2), --worker-concurrency N (8 per worker), --sample-ms N (5000),
// --settle-ms N (how long to wait for keys to come back after the end, 60000), --isolation
// auto|none (auto: every child in its sandbox, as deployed; none: unconfined children, when the
// sandbox's per-child cost would make the run too long for the host; retention is what it measures).
// Writes bench/results/soak.json.
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Cluster } from '@libos/e2e';
import { Redis } from 'ioredis';

const { values } = parseArgs({
  options: {
    children: { type: 'string', default: '200000' },
    'retention-ms': { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '16' },
    workers: { type: 'string', default: '2' },
    'worker-concurrency': { type: 'string', default: '8' },
    'sample-ms': { type: 'string', default: '5000' },
    'settle-ms': { type: 'string', default: '60000' },
    isolation: { type: 'string', default: 'auto' },
  },
});
const CHILDREN = Number(values.children);
const RETENTION_MS = Number(values['retention-ms']);
const CONCURRENCY = Number(values.concurrency);
const SAMPLE_MS = Number(values['sample-ms']);
const SETTLE_MS = Number(values['settle-ms']);
/** Enough launches to fill the coordinator's default event ring (1,000 entries) a few times over. */
const WARM_CHILDREN = 1_000;
const CHILD = fileURLToPath(new URL('./children/trivial.sh', import.meta.url));
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
process.env.E2E_FROM_DIST = '1';

/**
 * CPU ms of everything this run started (Redis, coordinator, workers, their spawners and the
 * children they reaped) and of this process: a throughput figure depends on what else the host
 * runs, CPU per child much less, so the first and last fifths are compared by both.
 */
function runCpuMs(): number {
  const stats = new Map<number, { ppid: number; ms: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i] ?? 0), 0);
      stats.set(Number(entry), { ppid: Number(fields[1]), ms: ticks * 10 });
    } catch {} // it ended meanwhile
  }
  const ours = new Set([process.pid]);
  let total = 0;
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, stat] of stats)
      if (!ours.has(pid) && ours.has(stat.ppid)) {
        ours.add(pid);
        total += stat.ms;
        grew = true;
      }
  }
  const self = process.cpuUsage();
  return total + (self.user + self.system) / 1000;
}

interface Sample {
  t_s: number;
  done: number;
  used_memory: number;
  keys: number;
  per_s: number;
}

const cluster = await Cluster.start({
  fsync: 'everysec',
  workers: Number(values.workers),
  concurrency: Number(values['worker-concurrency']),
  // a loaded host delays renewals: a longer lease than the default keeps children from going stale
  workerEnv: { LIBOS_LEASE_MS: '30000', LIBOS_ISOLATION: values.isolation === 'none' ? 'none' : 'auto' },
  coordinatorEnv: {
    LIBOS_RETENTION_MS: String(RETENTION_MS),
    LIBOS_GC_INTERVAL_MS: '1000',
    LIBOS_LOG_LEVEL: 'warn',
    // Bull Board's history is not what this measures: completed launch jobs go at once
    LIBOS_QUEUE_KEEP_COMPLETED: '0',
  },
});
const redis = new Redis(cluster.redis.url);
await redis.config('SET', 'slowlog-max-len', '1024');

/** Runs `one` `count` times, `--concurrency` at a time (the client pool). */
async function inPool(count: number, one: () => Promise<void>): Promise<void> {
  let started = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (started < count) {
        started++;
        await one();
      }
    }),
  );
}

async function measure(): Promise<{ used_memory: number; dataset: number; keys: number }> {
  const info = await redis.info('memory');
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1]);
  // dataset: used_memory less Redis's own overhead (client buffers, the script cache, AOF buffers)
  return {
    used_memory: field('used_memory'),
    dataset: field('used_memory_dataset'),
    keys: await redis.dbsize(),
  };
}

/** Every key's type and `MEMORY USAGE`: the end is compared key by key against the baseline. */
async function keyMemory(): Promise<Map<string, { type: string; bytes: number }>> {
  const out = new Map<string, { type: string; bytes: number }>();
  for await (const keys of redis.scanStream({ count: 1000 }) as AsyncIterable<string[]>)
    for (const key of keys) {
      const [type, bytes] = await Promise.all([redis.type(key), redis.memory('USAGE', key, 'SAMPLES', '0')]);
      out.set(key, { type, bytes: Number(bytes ?? 0) });
    }
  return out;
}

/** `MEMORY STATS`'s figures (allocator and per-db lines left out): where Redis says its bytes go. */
async function memoryStats(): Promise<Record<string, number>> {
  const flat = (await redis.call('MEMORY', 'STATS')) as unknown[];
  const out: Record<string, number> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const [name, value] = [String(flat[i]), flat[i + 1]];
    if (typeof value === 'number' && !/^(allocator|rss|fragmentation|peak)/.test(name)) out[name] = value;
  }
  return out;
}

/** What the end holds beyond the baseline, key by key, largest first. */
function keyGrowth(
  before: Map<string, { type: string; bytes: number }>,
  after: Map<string, { type: string; bytes: number }>,
): { key: string; type: string; bytes_before: number; bytes_after: number }[] {
  const rows = [...after].map(([key, { type, bytes }]) => ({
    key,
    type,
    bytes_before: before.get(key)?.bytes ?? 0,
    bytes_after: bytes,
  }));
  for (const [key, { type, bytes }] of before)
    if (!after.has(key)) rows.push({ key, type, bytes_before: bytes, bytes_after: 0 });
  return rows
    .filter((r) => r.bytes_after !== r.bytes_before)
    .sort((a, b) => Math.abs(b.bytes_after - b.bytes_before) - Math.abs(a.bytes_after - a.bytes_before));
}

try {
  await cluster.admin.putImage('trivial', { command: 'sh', args: [CHILD, '{result_file}'] });
  // Warm up before the baseline: the queue's keys exist and BullMQ's event stream, a ring capped
  // at LIBOS_QUEUE_EVENTS_MAX entries (a few per launch), is full, as in a cluster in service; it
  // is bounded and does not grow with the children run, which is what the soak measures.
  const warm = await cluster.root('warm', { goal: 'warm', resource_budget: { children: WARM_CHILDREN } });
  await inPool(WARM_CHILDREN, async () => {
    const w = await warm.client.spawn({ goal: 'warm', image: 'trivial' });
    await warm.client.wait({ child_pid: w.pid });
  });
  await warm.client.exit({});
  await new Promise((resolve) => setTimeout(resolve, RETENTION_MS + 2_500));
  await cluster.admin.gc();
  await cluster.admin.gc();
  // The SLOWLOG keeps each entry's arguments in memory that INFO counts as dataset (1,024 script
  // calls are ~0.5 MB): it is empty at both ends of the comparison and records the run only.
  await redis.slowlog('RESET');
  const baseline = await measure();
  const baselineKeys = await keyMemory();
  const baselineStats = await memoryStats();
  console.log(`baseline: used_memory ${baseline.used_memory} B, ${baseline.keys} keys`);

  await redis.config('SET', 'slowlog-log-slower-than', '1000');
  const { pid: rootPid, client } = await cluster.root('soak', {
    goal: 'soak',
    resource_budget: { children: CHILDREN + 10 },
  });
  const started = Date.now();
  const finishedAt: number[] = [];
  const samples: Sample[] = [];
  let lastDone = 0;
  let lastT = started;
  console.log('t_s      done   per_s  used_memory      keys');
  const sampler = setInterval(async () => {
    const m = await measure();
    const now = Date.now();
    const sample = {
      t_s: +((now - started) / 1000).toFixed(1),
      done: finishedAt.length,
      per_s: Math.round(((finishedAt.length - lastDone) * 1000) / (now - lastT)),
      ...m,
    };
    lastDone = finishedAt.length;
    lastT = now;
    samples.push(sample);
    console.log(
      `${String(sample.t_s).padEnd(8)} ${String(sample.done).padStart(6)} ${String(sample.per_s).padStart(6)}  ${String(m.used_memory).padStart(11)} ${String(m.keys).padStart(9)}`,
    );
  }, SAMPLE_MS);

  const fifthOf = Math.max(1, Math.floor(CHILDREN / 5));
  const cpu = { start: runCpuMs(), firstEnd: 0, lastStart: 0, end: 0 };
  const load = { first: 0, last: 0 };
  let failures = 0;
  const inFlight = new Set<string>();
  // On a loaded host a worker may miss its lease: the child is paused (stale_execution) and never
  // ends by itself. Those are ended by the operator and counted; a run stuck otherwise stops.
  let progressAt = Date.now();
  let progressDone = 0;
  let stale = 0;
  const watchdog = setInterval(async () => {
    if (finishedAt.length !== progressDone) {
      progressDone = finishedAt.length;
      progressAt = Date.now();
    }
    for (const pid of inFlight) {
      const view = await cluster.admin.getProcess(pid).catch(() => undefined);
      if (view?.status === 'paused' && view.pause_reason === 'stale_execution') {
        stale++;
        await cluster.admin
          .signalProcess(pid, 'terminate', 'soak: stale after a missed lease')
          .catch(() => {});
      }
    }
    if (Date.now() - progressAt < 120_000) return;
    for (const pid of inFlight) {
      const view = await cluster.admin.getProcess(pid).catch((error: unknown) => String(error));
      console.error(`stuck on ${pid}:`, JSON.stringify(view));
    }
    process.exit(2);
  }, 5_000);
  await inPool(CHILDREN, async () => {
    const child = await client.spawn({ goal: 'trivial', image: 'trivial' });
    inFlight.add(child.pid);
    const done = await client.wait({ child_pid: child.pid });
    inFlight.delete(child.pid);
    if (done.status !== 'exited') failures++;
    finishedAt.push(Date.now());
    if (finishedAt.length === fifthOf) {
      cpu.firstEnd = runCpuMs();
      load.first = loadavg()[0] ?? 0;
    }
    if (finishedAt.length === CHILDREN - fifthOf) cpu.lastStart = runCpuMs();
  });
  clearInterval(watchdog);
  cpu.end = runCpuMs();
  load.last = loadavg()[0] ?? 0;
  const ranMs = Date.now() - started;
  const slow = (await redis.slowlog('GET', 1024)) as [number, number, number, string[]][];
  const slowest = slow
    .map(([, , micros, args]) => ({ micros, command: args.slice(0, 2).join(' ') }))
    .sort((a, b) => b.micros - a.micros)
    .slice(0, 5);
  await redis.config('SET', 'slowlog-log-slower-than', '-1');
  await redis.slowlog('RESET');
  const peak = samples.reduce((m, s) => (s.used_memory > m.used_memory ? s : m), samples[0] ?? baseline);

  // the last children's retention period, then the root's own end and retention
  await new Promise((resolve) => setTimeout(resolve, RETENTION_MS + 1_500));
  await client.exit({});
  const settleStart = Date.now();
  let end = await measure();
  while (Date.now() - settleStart < SETTLE_MS) {
    await cluster.admin.gc();
    end = await measure();
    if (end.keys <= baseline.keys * 1.1 && end.used_memory <= baseline.used_memory * 1.1) break;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  clearInterval(sampler);
  const growth = keyGrowth(baselineKeys, await keyMemory());
  const endStats = await memoryStats();
  const statsChange = Object.fromEntries(
    Object.entries(endStats)
      .filter(([name, value]) => value !== baselineStats[name])
      .map(([name, value]) => [name, { baseline: baselineStats[name], end: value }]),
  );
  const settledMs = Date.now() - settleStart;
  const rootGone = await cluster.admin.getProcess(rootPid).then(
    () => false,
    () => true,
  );

  const fifth = Math.max(1, Math.floor(finishedAt.length / 5));
  const rate = (from: number, to: number) =>
    +(((to - from) * 1000) / ((finishedAt[to - 1] ?? 0) - (finishedAt[from] ?? 0) || 1)).toFixed(1);
  const first = rate(0, fifth);
  const last = rate(finishedAt.length - fifth, finishedAt.length);

  const result = {
    children: finishedAt.length,
    failures,
    stale_terminated: stale,
    retention_ms: RETENTION_MS,
    client_concurrency: CONCURRENCY,
    workers: Number(values.workers),
    worker_concurrency: Number(values['worker-concurrency']),
    ran_s: +(ranMs / 1000).toFixed(1),
    children_per_s: +((finishedAt.length * 1000) / ranMs).toFixed(1),
    throughput_first_20pct_per_s: first,
    throughput_last_20pct_per_s: last,
    // every part's CPU per child in the first and last fifths, and the 1-min load at their ends
    cpu_ms_per_child_first_20pct: +((cpu.firstEnd - cpu.start) / fifthOf).toFixed(2),
    cpu_ms_per_child_last_20pct: +((cpu.end - cpu.lastStart) / fifthOf).toFixed(2),
    load_first_20pct: +load.first.toFixed(1),
    load_last_20pct: +load.last.toFixed(1),
    baseline,
    peak: { used_memory: peak.used_memory, keys: peak.keys },
    end,
    end_vs_baseline: {
      used_memory: +(end.used_memory / baseline.used_memory).toFixed(3),
      dataset: +(end.dataset / baseline.dataset).toFixed(3),
      keys: +(end.keys / baseline.keys).toFixed(3),
    },
    settled_s: +(settledMs / 1000).toFixed(1),
    root_deleted: rootGone,
    // the memory Redis reports per key (MEMORY USAGE), where the end differs from the baseline
    key_growth: growth.slice(0, 10),
    memory_stats_change: statsChange,
    slowlog_over_1ms: { count: slow.length, slowest },
    samples,
  };
  console.log(JSON.stringify({ ...result, samples: undefined }, null, 2));
  await mkdir(RESULTS, { recursive: true });
  await writeFile(`${RESULTS}soak.json`, `${JSON.stringify(result, null, 2)}\n`);
} finally {
  redis.disconnect();
  await cluster.stop();
}
