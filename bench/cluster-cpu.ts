// Where the cluster's CPU goes: CPU time (user + system, from /proc) per trivial sh child, by
// part, while 2 workers × 4 run a batch: the coordinator, the workers, the children they run,
// Redis, and this process as the service that spawns and waits. The same figures for a bare
// execa loop of the same children at concurrency 8 come first: the gap between the two totals is
// what the cluster costs per child. A guide for cutting per-child work.
//   npm run build && node --import tsx --conditions=@libos/source bench/cluster-cpu.ts [--children N]
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { encodeRequestLine } from '@libos/contract';
import { Cluster } from '@libos/e2e';
import { execa } from 'execa';
import { Redis } from 'ioredis';

const { values } = parseArgs({ options: { children: { type: 'string', default: '400' } } });
const N = Number(values.children);
const STAMP = fileURLToPath(new URL('./children/stamp.sh', import.meta.url));
process.env.E2E_FROM_DIST = '1';

/** CPU milliseconds of a process itself and of its reaped children (clock ticks are 10 ms). */
function cpuMs(pid: number): { self: number; children: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const tick = (i: number) => Number(fields[i]) * 10;
  return { self: tick(11) + tick(12), children: tick(13) + tick(14) };
}

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

async function runPool(count: number, concurrency: number, task: (i: number) => Promise<void>) {
  let next = 0;
  const lane = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
}

const dir = await mkdtemp(join(tmpdir(), 'libos-bench-'));
const bare = () =>
  runPool(N, 8, async (i) => {
    const path = join(dir, `${i}.json`);
    await execa('sh', [STAMP, path], {
      input: encodeRequestLine({ request_id: `b${i}`, kind: 'stamp', input: {} }),
    });
    JSON.parse(await readFile(path, 'utf8'));
  });
await bare(); // warm-up
await measure(
  'bare execa loop, concurrency 8',
  { 'loop (this process)': () => cpuMs(process.pid).self, children: () => cpuMs(process.pid).children },
  bare,
);
await rm(dir, { recursive: true, force: true });

// As `libos up` runs on one host: Redis over its unix socket.
const cluster = await Cluster.start({ workers: 2, concurrency: 4, fsync: 'everysec', unixSocket: true });
const redis = new Redis(cluster.redis.url);
try {
  const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))![1]);
  await cluster.admin.putImage('stamp', {
    command: 'sh',
    args: [STAMP, '{result_file}'],
    deadline_ms: 30_000,
  });
  const workers = cluster.workers.map((worker) => worker!.pid!);
  const parts: Parts = {
    coordinator: () => cpuMs(cluster.coordinator!.pid!).self,
    workers: () => workers.reduce((sum, pid) => sum + cpuMs(pid).self, 0),
    children: () => workers.reduce((sum, pid) => sum + cpuMs(pid).children, 0),
    redis: () => cpuMs(redisPid).self,
    'service (this process)': () => cpuMs(process.pid).self,
  };
  for (const round of ['warm-up', 'cluster, 2 workers × 4', 'cluster, 2 workers × 4 (again)']) {
    const { client } = await cluster.root(round, { goal: round, resource_budget: { children: N + 10 } });
    const spawnAndWait = async () => {
      const children: string[] = [];
      await runPool(N, 16, async () => {
        children.push((await client.spawn({ goal: 'x', image: 'stamp' })).pid);
      });
      await runPool(N, 64, async (i) => {
        await client.wait({ child_pid: children[i]! });
      });
    };
    if (round === 'warm-up') await spawnAndWait();
    else await measure(round, parts, spawnAndWait);
  }
} finally {
  redis.disconnect();
  await cluster.stop();
}
