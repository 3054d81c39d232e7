// libos and its peers side by side: the same trivial contract child at the same total
// concurrency through a bare node:child_process.spawn loop (the baseline), a libos cluster as
// `libos up` runs it (spawn + wait per child, and the batch tools spawn_children/wait_children),
// hand-written BullMQ + execa (a Queue, Worker processes running execa, the caller waiting per job
// through QueueEvents), a BullMQ FlowProducer (a parent job per batch of children) and Celery with
// the Redis broker (a prefork worker running each child through subprocess; Debian's
// python3-celery and python3-redis, skipped with a notice when missing). Each side has its own
// redis-server (AOF everysec, as deploy/redis.conf; libos over its unix socket as `libos up`, the
// peers over loopback TCP) and its own processes; rounds are interleaved and each round starts
// with a different side, so a noisy neighbour on a shared host hits them alike. For each side:
// children/s, and CPU ms per child of all its processes: the callers and its redis-server from
// /proc, the workers with everything they start from a cgroup cpuacct group each (bench/lib/cgroup.ts;
// /proc misses a sandboxed child's time), or from /proc where no such group can be made.
//   npm run bench:peers   (builds, then: node --import tsx --conditions=@libos/source bench/peers.ts)
// Options: --children N (400 per round and side), --rounds N (3), --warm-up N (1 unmeasured
// round of every side), --concurrency N (8 in all: libos and BullMQ 2 workers × N/2, Celery one
// worker with N pool processes, the bare loop N at a time), --batch N (100: children per
// spawn_children call, flow or Celery group; 4 batches in flight), --child stamp|trivial
// (bench/children/*.sh), --timeout-ms N (60000: a BullMQ/Celery completion not seen by then is
// counted as missed), --isolation auto|none (auto: libos's children in their sandboxes, as
// deployed; none: unconfined, as the peers run theirs). Writes bench/results/peers.json.
import { type ChildProcess, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { encodeRequestLine } from '@libos/contract';
import { exited, spawnOwned, startRedis } from '@libos/testkit';
import { FlowProducer, Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { type TreeMeter, treeMeter } from './lib/cgroup.js';
import { clusterPids, startBenchCluster } from './lib/cluster.js';
import {
  bareLoop,
  CHILD_SCRIPTS,
  clusterBatchThroughput,
  clusterThroughput,
  type Launch,
  spawnChild,
} from './lib/loops.js';
import { mdRow, runPool } from './lib/pool.js';
import { cpuMs, descendants } from './lib/proc.js';

const { values } = parseArgs({
  options: {
    children: { type: 'string', default: '400' },
    rounds: { type: 'string', default: '3' },
    'warm-up': { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '8' },
    batch: { type: 'string', default: '100' },
    child: { type: 'string', default: 'stamp' },
    'timeout-ms': { type: 'string', default: '60000' },
    isolation: { type: 'string', default: 'auto' },
  },
});
const N = Number(values.children);
const ROUNDS = Number(values.rounds);
const WARM_UP = Number(values['warm-up']);
const CONCURRENCY = Number(values.concurrency);
const WORKERS = 2;
const PER_WORKER = Math.max(1, Math.floor(CONCURRENCY / WORKERS));
const BATCH = Number(values.batch);
const IN_FLIGHT = 4;
const TIMEOUT_MS = Number(values['timeout-ms']);
const CHILD = values.child === 'trivial' ? 'trivial' : 'stamp';
// libos's children in their sandboxes (auto, as deployed) or not (none: as the peers run theirs).
const ISOLATION = values.isolation === 'none' ? 'none' : 'auto';
const LAUNCH: Launch = { command: 'sh', args: [CHILD_SCRIPTS[CHILD], '{result_file}'] };
const PEERS_DIR = fileURLToPath(new URL('./peers/', import.meta.url));
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const PYTHON = '/usr/bin/python3'; // Debian's, where python3-celery lives (not a pyenv shim's)

/** One way of running children; `cpu` is every process of this side, by part, in ms so far. */
interface Side {
  readonly name: string;
  /** Runs `count` children and resolves with how many were missed (failed or not seen in time). */
  run(count: number): Promise<number>;
  cpu(): Record<string, number>;
  stop(): Promise<void>;
}

const self = () => cpuMs(process.pid).self;
/** Every meter made, closed at the end (their cgroups removed). */
const meters: TreeMeter[] = [];
const meter = (name: string, pids: readonly number[]) => {
  const made = treeMeter(name, pids);
  meters.push(made);
  return made;
};
const requestLine = (i: number) => encodeRequestLine({ request_id: `p${i}`, kind: 'stamp', input: {} });

async function redisPidOf(url: string): Promise<number> {
  const client = new Redis(url);
  try {
    return Number(/process_id:(\d+)/.exec(await client.info('server'))?.[1]);
  } finally {
    client.disconnect();
  }
}

/** A redis-server of a peer's own: AOF everysec, as the cluster's, over loopback TCP. */
async function peerRedis() {
  const redis = await startRedis({ own: true, aof: true, fsync: 'everysec' });
  const port = Number(new URL(redis.url).port);
  return { redis, port, pid: await redisPidOf(redis.url) };
}

/** The next line `child` prints, or a rejection after `withinMs` or at its exit. */
function lineReader(child: ChildProcess) {
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  return async (withinMs: number, what: string): Promise<string> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no ${what} within ${withinMs} ms`)), withinMs);
    });
    try {
      const next = await Promise.race([lines.next(), late]);
      if (next.done) throw new Error(`${what}: the process ended`);
      return next.value;
    } finally {
      clearTimeout(timer);
    }
  };
}

/** SIGTERM, then SIGKILL to what is left of its tree after `graceMs`. */
async function stopTree(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const tree = [child.pid, ...descendants(child.pid)];
  child.kill('SIGTERM');
  const timer = setTimeout(() => {
    for (const pid of tree) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }, graceMs);
  await exited(child);
  clearTimeout(timer);
}

function bareSide(): Side {
  return {
    name: 'bare child_process.spawn loop',
    run: async (count) => {
      await bareLoop(LAUNCH, count, CONCURRENCY, spawnChild);
      return 0;
    },
    cpu: () => ({ 'this process': self(), children: cpuMs(process.pid).children }),
    stop: async () => {},
  };
}

async function libosSides(): Promise<Side[]> {
  const cluster = await startBenchCluster({ workers: WORKERS, perWorker: PER_WORKER, isolation: ISOLATION });
  await cluster.admin.putImage('peer', { ...LAUNCH, args: [...LAUNCH.args], deadline_ms: 30_000 });
  const pids = await clusterPids(cluster);
  const coordinator = meter('libos-coordinator', pids.coordinator === undefined ? [] : [pids.coordinator]);
  const workers = meter('libos-workers', pids.workers);
  const cpu = () => ({
    caller: self(),
    coordinator: coordinator.ms(),
    workers: workers.ms(),
    redis: cpuMs(pids.redis).self,
  });
  let stopped = false;
  const stop = async () => {
    if (!stopped) await cluster.stop();
    stopped = true;
  };
  return [
    {
      name: `libos, spawn + wait per child (${WORKERS} workers × ${PER_WORKER}, isolation ${ISOLATION})`,
      run: async (count) => {
        await clusterThroughput(cluster, 'peer', count);
        return 0;
      },
      cpu,
      stop,
    },
    {
      name: `libos, spawn_children / wait_children × ${BATCH}`,
      run: async (count) => {
        await clusterBatchThroughput(cluster, 'peer', count, BATCH);
        return 0;
      },
      cpu,
      stop,
    },
  ];
}

/** BullMQ's worker processes (bench/peers/bullmq-worker.ts), each `ready` once consuming. */
async function bullmqWorkers(port: number): Promise<ChildProcess[]> {
  return Promise.all(
    Array.from({ length: WORKERS }, async () => {
      const worker = spawnOwned(process.execPath, ['--import', 'tsx', join(PEERS_DIR, 'bullmq-worker.ts')], {
        env: { ...process.env, PEERS_REDIS_PORT: String(port), PEERS_CONCURRENCY: String(PER_WORKER) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await lineReader(worker)(30_000, 'BullMQ worker ready');
      return worker;
    }),
  );
}

const KEEP = { removeOnComplete: { age: 600 }, removeOnFail: { age: 600 } };
const jobData = (i: number) => ({ command: LAUNCH.command, args: [...LAUNCH.args], line: requestLine(i) });

async function bullmqSide(flow: boolean): Promise<Side> {
  const { redis, port, pid } = await peerRedis();
  const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };
  const workers = await bullmqWorkers(port);
  const workersCpu = meter(
    `bullmq-${flow ? 'flow' : 'jobs'}`,
    workers.flatMap((worker) => worker.pid ?? []),
  );
  const queue = new Queue('children', { connection });
  const producer = new FlowProducer({ connection });
  const events = new QueueEvents(flow ? 'parents' : 'children', { connection });
  queue.setMaxListeners(0); // each waitUntilFinished listens for the queue's closing
  producer.setMaxListeners(0);
  await Promise.all([queue.waitUntilReady(), producer.waitUntilReady(), events.waitUntilReady()]);

  /** Per job: all added (16 at a time), then each waited for (64 at a time), as libos's spawn + wait. */
  const jobs = async (count: number) => {
    const added = await runPool(count, 16, (i) => queue.add('child', jobData(i), KEEP));
    let missed = 0;
    await runPool(count, 64, async (i) => {
      await added[i]!.waitUntilFinished(events, TIMEOUT_MS).catch(() => missed++);
    });
    return missed;
  };
  /** A flow per batch (a parent on `parents`, its children on `children`), IN_FLIGHT at a time. */
  const flows = async (count: number) => {
    let missed = 0;
    await runPool(Math.ceil(count / BATCH), IN_FLIGHT, async (b) => {
      const size = Math.min(BATCH, count - b * BATCH);
      const node = await producer.add({
        name: 'batch',
        queueName: 'parents',
        opts: KEEP,
        children: Array.from({ length: size }, (_, i) => ({
          name: 'child',
          queueName: 'children',
          data: jobData(b * BATCH + i),
          opts: KEEP,
        })),
      });
      await node.job.waitUntilFinished(events, TIMEOUT_MS).catch(() => {
        missed += size;
      });
    });
    return missed;
  };
  return {
    name: flow
      ? `BullMQ FlowProducer, a parent per ${BATCH} children`
      : `BullMQ + execa (${WORKERS} workers × ${PER_WORKER})`,
    run: flow ? flows : jobs,
    cpu: () => ({
      caller: self(),
      workers: workersCpu.ms(),
      redis: cpuMs(pid).self,
    }),
    stop: async () => {
      await Promise.all([queue.close(), producer.close(), events.close()]);
      await Promise.all(workers.map((worker) => stopTree(worker)));
      await redis.stop();
    },
  };
}

async function celerySide(): Promise<Side | undefined> {
  if (spawnSync(PYTHON, ['-c', 'import celery, redis']).status !== 0) {
    process.stdout.write(
      `Celery skipped: ${PYTHON} cannot import celery and redis (apt-get install -y python3-celery python3-redis)\n`,
    );
    return undefined;
  }
  const { redis, port, pid } = await peerRedis();
  const results = await mkdtemp(join(tmpdir(), 'libos-bench-celery-'));
  const env = { ...process.env, PEERS_REDIS_URL: `redis://127.0.0.1:${port}/0`, PEERS_RESULTS_DIR: results };
  const worker = spawnOwned(
    PYTHON,
    [
      '-m',
      'celery',
      '-A',
      'celery_peer',
      'worker',
      '--pool',
      'prefork',
      '--concurrency',
      String(CONCURRENCY),
      '--loglevel',
      'WARNING',
      '--without-gossip',
      '--without-mingle',
      '--without-heartbeat',
    ],
    { cwd: PEERS_DIR, env, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const workerCpu = meter('celery', worker.pid === undefined ? [] : [worker.pid]);
  const caller = spawnOwned(PYTHON, ['celery_peer.py'], {
    cwd: PEERS_DIR,
    env,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const nextLine = lineReader(caller);
  const ask = (count: number) =>
    caller.stdin!.write(
      `${JSON.stringify({ count, batch: BATCH, in_flight: IN_FLIGHT, ...LAUNCH, timeout_s: TIMEOUT_MS / 1000 })}\n`,
    );
  ask(1);
  await nextLine(60_000, 'the Celery caller ready');
  return {
    name: `Celery + Redis (prefork × ${CONCURRENCY}), groups of ${BATCH}`,
    run: async (count) => {
      ask(count);
      const answer = JSON.parse(
        await nextLine(TIMEOUT_MS * Math.ceil(count / BATCH) + 60_000, 'an answer'),
      ) as {
        missed: number;
      };
      return answer.missed;
    },
    cpu: () => ({ caller: cpuMs(caller.pid).self, worker: workerCpu.ms(), redis: cpuMs(pid).self }),
    stop: async () => {
      caller.stdin!.end();
      await stopTree(caller);
      await stopTree(worker);
      await redis.stop();
      await rm(results, { recursive: true, force: true });
    },
  };
}

interface Sample {
  side: string;
  round: number;
  per_s: number;
  cpu_ms_per_child: number;
  cpu_parts_ms_per_child: Record<string, number>;
  missed: number;
}

async function measure(side: Side, round: number): Promise<Sample> {
  const before = side.cpu();
  const started = performance.now();
  const missed = await side.run(N);
  const seconds = (performance.now() - started) / 1000;
  const after = side.cpu();
  const parts = Object.fromEntries(
    Object.entries(after).map(([part, ms]) => [part, +((ms - (before[part] ?? 0)) / N).toFixed(2)]),
  );
  const total = Object.values(parts).reduce((a, b) => a + b, 0);
  return {
    side: side.name,
    round,
    per_s: +(N / seconds).toFixed(1),
    cpu_ms_per_child: +total.toFixed(2),
    cpu_parts_ms_per_child: parts,
    missed,
  };
}

const sides: Side[] = [];
try {
  sides.push(bareSide());
  sides.push(...(await libosSides()));
  sides.push(await bullmqSide(false));
  sides.push(await bullmqSide(true));
  const celery = await celerySide();
  if (celery) sides.push(celery);
  for (let r = 0; r < WARM_UP; r++) for (const side of sides) await side.run(N);
  const samples: Sample[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Each round starts with another side: none always runs right after the same neighbour.
    for (let k = 0; k < sides.length; k++) {
      const sample = await measure(sides[(r + k) % sides.length]!, r);
      samples.push(sample);
      process.stdout.write(
        `round ${r} ${sample.side}: ${sample.per_s}/s, ${sample.cpu_ms_per_child} ms CPU/child ${JSON.stringify(sample.cpu_parts_ms_per_child)}${sample.missed ? `, ${sample.missed} missed` : ''}\n`,
      );
    }
  }
  const ACCOUNTING = meters.every((made) => made.via === 'cgroup')
    ? 'from cgroup cpuacct groups (every process of their trees)'
    : "from /proc (a sandboxed child's own time is missing)";
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const summary = sides.map((side) => {
    const mine = samples.filter((s) => s.side === side.name);
    const rates = mine.map((s) => s.per_s);
    return {
      side: side.name,
      per_s: +mean(rates).toFixed(1),
      min_per_s: Math.min(...rates),
      max_per_s: Math.max(...rates),
      cpu_ms_per_child: +mean(mine.map((s) => s.cpu_ms_per_child)).toFixed(2),
      missed: mine.reduce((a, s) => a + s.missed, 0),
    };
  });
  const base = summary[0]!;
  const lines = [
    `${N} trivial children (bench/children/${CHILD}.sh) per round and side, total concurrency ${CONCURRENCY}, ${ROUNDS} interleaved rounds; load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} CPUs at the end; workers' CPU ${ACCOUNTING}`,
    '',
    mdRow([
      'side',
      'children/s (mean)',
      'min–max',
      '÷ bare spawn',
      'CPU ms per child',
      '÷ bare spawn',
      'missed',
    ]),
    mdRow(['---', '---:', '---:', '---:', '---:', '---:', '---:']),
    ...summary.map((s) =>
      mdRow([
        s.side,
        s.per_s,
        `${s.min_per_s}–${s.max_per_s}`,
        (s.per_s / base.per_s).toFixed(2),
        s.cpu_ms_per_child,
        (s.cpu_ms_per_child / base.cpu_ms_per_child).toFixed(2),
        s.missed,
      ]),
    ),
  ];
  // libos (each mode) against each peer: > 1 means libos is ahead (faster, or cheaper in CPU).
  const libos = summary.filter((s) => s.side.startsWith('libos'));
  const peers = summary.filter((s) => !s.side.startsWith('libos') && s !== base);
  lines.push(
    '',
    mdRow(['libos ÷ peer', ...peers.map((p) => p.side)]),
    mdRow(['---', ...peers.map(() => '---:')]),
  );
  for (const mode of libos) {
    lines.push(
      mdRow([
        `${mode.side}: children/s ×, CPU per child ×`,
        ...peers.map(
          (p) =>
            `${(mode.per_s / p.per_s).toFixed(2)}, ${(p.cpu_ms_per_child / mode.cpu_ms_per_child).toFixed(2)}`,
        ),
      ]),
    );
  }
  process.stdout.write(`\n${lines.join('\n')}\n`);
  await mkdir(RESULTS, { recursive: true });
  await writeFile(
    join(RESULTS, 'peers.json'),
    `${JSON.stringify(
      {
        bench: 'peers',
        date: new Date().toISOString(),
        machine: { cpus: cpus().length, node: process.version, loadavg: loadavg() },
        config: {
          children: N,
          rounds: ROUNDS,
          concurrency: CONCURRENCY,
          batch: BATCH,
          child: CHILD,
          isolation: ISOLATION,
        },
        summary,
        samples,
      },
      null,
      2,
    )}\n`,
  );
} finally {
  for (const side of sides) await side.stop().catch((error: unknown) => process.stderr.write(`${error}\n`));
  for (const made of meters) made.close();
}
