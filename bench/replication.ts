// What LIBOS_REDIS_MIN_REPLICAS costs: spawn latency and throughput through the kernel against a
// real primary with one real replica (two private redis-servers on loopback, AOF always), with
// replicas 0 (the baseline, no WAIT) and 1 (WAIT 1 after each state change), in interleaved rounds.
// Run: node --import tsx --conditions=@libos/source bench/replication.ts [--spawns 2000] [--rounds 3] [--concurrency 1,16,64]
import { mkdir, writeFile } from 'node:fs/promises';
import { Kernel } from '@libos/kernel';
import { startRedis } from '@libos/testkit';
import { Redis } from 'ioredis';
import { quantile } from './lib/stats.js';

function flag(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? (process.argv[at + 1] ?? fallback) : fallback;
}

const SPAWNS = Number(flag('spawns', '2000'));
const ROUNDS = Number(flag('rounds', '3'));
const CONCURRENCY = flag('concurrency', '1,16,64').split(',').map(Number);

interface Sample {
  replicas: number;
  concurrency: number;
  spawnsPerSec: number;
  p50: number;
  p99: number;
}

async function round(kernel: Kernel, replicas: number, concurrency: number): Promise<Sample> {
  const root = await kernel.admin.createRoot({ goal: 'bench', image: 'bench' });
  const latencies: number[] = [];
  let left = SPAWNS;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left-- > 0) {
        const t = performance.now();
        await kernel.tools.spawn_child_process({ pid: root.pid }, { goal: 'c' });
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    replicas,
    concurrency,
    spawnsPerSec: Math.round(latencies.length / seconds),
    p50: Number(quantile(latencies, 0.5).toFixed(3)),
    p99: Number(quantile(latencies, 0.99).toFixed(3)),
  };
}

async function main(): Promise<void> {
  const [primary, replica] = await Promise.all([
    startRedis({ own: true, aof: true }),
    startRedis({ own: true, aof: true }),
  ]);
  const replicaClient = new Redis(replica.url);
  await replicaClient.call('REPLICAOF', '127.0.0.1', new URL(primary.url).port);
  while (!/master_link_status:up/.test(await replicaClient.info('replication'))) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // One connection per kernel, as the coordinator has (not auto-pipelined).
  const clients = [0, 1].map(() => new Redis(primary.url));
  const kernels = clients.map(
    (redis, replicas) =>
      new Kernel({ redis, keyPrefix: 'bench:', replication: { replicas, timeoutMs: 5_000 } }),
  );
  await kernels[0]?.admin.putImage('bench', { command: 'true', args: ['{result_file}'] });
  const samples: Sample[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const concurrency of CONCURRENCY) {
      for (const replicas of [0, 1])
        samples.push(await round(kernels[replicas] as Kernel, replicas, concurrency));
    }
  }
  const lines = [
    '| concurrency | replicas | spawns/s | p50 ms | p99 ms |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const concurrency of CONCURRENCY) {
    for (const replicas of [0, 1]) {
      const mine = samples.filter((s) => s.concurrency === concurrency && s.replicas === replicas);
      const mean = (pick: (s: Sample) => number) => mine.reduce((a, s) => a + pick(s), 0) / mine.length;
      lines.push(
        `| ${concurrency} | ${replicas} | ${Math.round(mean((s) => s.spawnsPerSec))} | ${mean((s) => s.p50).toFixed(2)} | ${mean((s) => s.p99).toFixed(2)} |`,
      );
    }
  }
  const table = lines.join('\n');
  process.stdout.write(`${table}\n(${SPAWNS} spawns per round, ${ROUNDS} rounds, means of the rounds)\n`);
  await mkdir(new URL('./results/', import.meta.url), { recursive: true });
  await writeFile(new URL('./results/replication.json', import.meta.url), JSON.stringify(samples, null, 2));
  await writeFile(new URL('./results/replication.md', import.meta.url), `${table}\n`);
  for (const kernel of kernels) await kernel.close();
  for (const client of [...clients, replicaClient]) client.disconnect();
  await Promise.all([primary.stop(), replica.stop()]);
  process.exit(0);
}

await main();
