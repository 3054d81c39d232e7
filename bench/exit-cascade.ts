// How long one script call holds Redis when a root with a wide fan-out exits: a caller-driven root
// with `--children` queued children exits, and its children are killed (parent_terminated) in
// calls of at most `--batch` children (LIBOS_TERMINATE_BATCH), against the same exit in one call
// (a batch larger than the fan-out: what the kernel did before the cascade was batched), in
// alternating rounds on one redis-server. Redis's SLOWLOG (threshold 0) times every script call
// on the server. At the default threshold 0 the commands a script runs are logged too, which
// costs both modes alike, per child; `--slower-than 1000` (µs) logs the scripts without most of
// them (then calls shorter than that are not counted). Run: node --import tsx
// --conditions=@libos/source bench/exit-cascade.ts [--children 10000] [--batch 50] [--rounds 2]
// [--slower-than 0]. Writes bench/results/exit-cascade.json.
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Kernel } from '@libos/kernel';
import { startRedis } from '@libos/testkit';
import { Redis } from 'ioredis';
import { quantile } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    children: { type: 'string', default: '10000' },
    batch: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '2' },
    'slower-than': { type: 'string', default: '0' },
  },
});
const CHILDREN = Number(values.children);
const BATCH = Number(values.batch);
const ROUNDS = Number(values.rounds);
const SLOWER_THAN = Number(values['slower-than']);
const SPAWN_BATCH = 256;

type SlowEntry = [number, number, number, string[]];

interface Sample {
  /** Script calls on the exiting tree (the exit and its continuations). */
  calls: number;
  us_max: number;
  us_p99: number;
  us_p50: number;
  /** Redis time of all of them. */
  us_total: number;
  /** The exit as its caller saw it (every child ended when it returns). */
  exit_ms: number;
}

const server = await startRedis({ own: true });
const redis = new Redis(server.url);
const kernels = {
  batched: new Kernel({ redis, keyPrefix: 'xc:', limits: { terminateBatch: BATCH } }),
  unbatched: new Kernel({ redis, keyPrefix: 'xc:', limits: { terminateBatch: CHILDREN + 1 } }),
};

async function exitOnce(kernel: Kernel): Promise<Sample> {
  const root = await kernel.admin.createRoot({
    goal: 'exit cascade',
    image: 'x',
    resource_budget: { children: CHILDREN },
  });
  for (let spawned = 0; spawned < CHILDREN; spawned += SPAWN_BATCH) {
    const count = Math.min(SPAWN_BATCH, CHILDREN - spawned);
    const children = Array.from({ length: count }, (_, i) => ({ goal: `child ${spawned + i}` }));
    await kernel.tools.spawn_children({ pid: root.pid }, { children });
  }
  await kernel.flushIndex();
  await redis.slowlog('RESET');
  const started = performance.now();
  await kernel.tools.process_exit({ pid: root.pid }, {});
  const exitMs = performance.now() - started;
  const log = (await redis.slowlog('GET', 1_000_000)) as SlowEntry[];
  const seq = kernel.keys.seq(root.pid);
  const micros = log
    // a script's first call is an EVAL (ioredis loads it then), later ones EVALSHA
    .filter(([, , , args]) => /^eval(sha)?$/i.test(args[0] ?? '') && args[3] === seq)
    .map(([, , us]) => us)
    .sort((a, b) => a - b);
  const killed = await kernel.admin.listProcesses({ root: root.pid, status: 'killed', limit: 1 });
  if (killed.processes.length === 0) throw new Error('the children were not killed');
  return {
    calls: micros.length,
    us_max: micros.at(-1) ?? 0,
    us_p99: quantile(micros, 0.99),
    us_p50: quantile(micros, 0.5),
    us_total: micros.reduce((a, b) => a + b, 0),
    exit_ms: Math.round(exitMs),
  };
}

try {
  await kernels.batched.admin.putImage('x', { command: 'sh', args: ['{result_file}'] });
  await redis.config('SET', 'slowlog-log-slower-than', String(SLOWER_THAN));
  await redis.config('SET', 'slowlog-max-len', '1000000');
  const samples: Record<keyof typeof kernels, Sample[]> = { batched: [], unbatched: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of ['batched', 'unbatched'] as const) {
      const sample = await exitOnce(kernels[mode]);
      samples[mode].push(sample);
      console.error(`round ${round + 1} ${mode}: ${JSON.stringify(sample)}`);
    }
  }
  await redis.config('SET', 'slowlog-log-slower-than', '10000');
  const worst = (mode: keyof typeof kernels, key: keyof Sample) =>
    Math.max(...samples[mode].map((sample) => sample[key]));
  const result = {
    children: CHILDREN,
    batch: BATCH,
    rounds: ROUNDS,
    slower_than_us: SLOWER_THAN,
    samples,
    batched_us_max: worst('batched', 'us_max'),
    unbatched_us_max: worst('unbatched', 'us_max'),
    // how much shorter the longest hold of Redis is, batched
    max_ratio: worst('unbatched', 'us_max') / Math.max(1, worst('batched', 'us_max')),
    load_average: loadavg()[0],
  };
  console.log(JSON.stringify(result, null, 2));
  await mkdir(new URL('./results/', import.meta.url), { recursive: true });
  await writeFile(
    new URL('./results/exit-cascade.json', import.meta.url),
    `${JSON.stringify(result, null, 2)}\n`,
  );
} finally {
  for (const kernel of Object.values(kernels)) await kernel.close();
  redis.disconnect();
  await server.stop();
}
