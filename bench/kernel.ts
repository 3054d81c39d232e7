// Kernel benchmark: Redis round trips per operation and operations per second for spawn (single,
// and spawn_children batches of 10 and 100), send+read and a ready wait, against one private redis-server (no AOF), from one Node process.
// Run: node --import tsx --conditions=@libos/source bench/kernel.ts [--seconds 3] [--concurrency 64]
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { Kernel, mintToken } from '@libos/kernel';
import { startRedis } from '@libos/testkit';
import { Redis } from 'ioredis';

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

const SECONDS = flag('seconds', 3);
const CONCURRENCY = flag('concurrency', 64);
/** spawn_children batch sizes measured against single spawns in the same run. */
const BATCH_SIZES = [10, 100];

/**
 * Counts every command the client sends, by name (a pipelined command counts as one). Index
 * batches are EVALSHA calls whose key carries an index shard's tag `{idx<n>}`: they are counted apart too.
 */
function countCommands(redis: Redis): Map<string, number> {
  const counts = new Map<string, number>();
  const original = redis.sendCommand.bind(redis) as (...args: unknown[]) => unknown;
  redis.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
    counts.set(command.name, (counts.get(command.name) ?? 0) + 1);
    if (command.name === 'evalsha' && String(command.args[2] ?? '').includes('{idx')) {
      counts.set('index batch', (counts.get('index batch') ?? 0) + 1);
    }
    return original(command, ...rest);
  }) as typeof redis.sendCommand;
  return counts;
}

interface Phase {
  name: string;
  ops: number;
  seconds: number;
  ops_per_sec: number;
  /** Commands per operation on the kernel's connection, by command name. */
  round_trips_per_op: Record<string, number>;
  script_calls_per_op: number;
  index_batches_per_op: number;
}

async function phase(
  name: string,
  counts: Map<string, number>,
  kernel: Kernel,
  worker: (slot: number, stopAt: number) => Promise<number>,
): Promise<Phase> {
  await kernel.flushIndex();
  counts.clear();
  const started = process.hrtime.bigint();
  const stopAt = Date.now() + SECONDS * 1000;
  const done = await Promise.all(Array.from({ length: CONCURRENCY }, (_, slot) => worker(slot, stopAt)));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await kernel.flushIndex();
  const ops = done.reduce((a, b) => a + b, 0);
  const perOp: Record<string, number> = {};
  for (const [command, n] of [...counts].sort()) perOp[command] = Number((n / ops).toFixed(4));
  // defineCommand runs EVALSHA; the index writer's batches are EVALSHA calls too: split them
  const indexBatches = counts.get('index batch') ?? 0;
  return {
    name,
    ops,
    seconds: Number(seconds.toFixed(3)),
    ops_per_sec: Math.round(ops / seconds),
    round_trips_per_op: perOp,
    script_calls_per_op: Number((((counts.get('evalsha') ?? 0) - indexBatches) / ops).toFixed(4)),
    index_batches_per_op: Number((indexBatches / ops).toFixed(4)),
  };
}

async function main(): Promise<void> {
  const server = await startRedis({ own: true });
  const redis = new Redis(server.url);
  const counts = countCommands(redis);
  const kernel = new Kernel({ redis, keyPrefix: 'bench:' });
  await kernel.admin.putImage('bench', { command: 'true', args: ['{result_file}'] });

  const roots: string[] = [];
  for (let i = 0; i < CONCURRENCY; i++)
    roots.push((await kernel.admin.createRoot({ goal: `root ${i}`, image: 'bench' })).pid);
  // warm the script cache and the JIT
  for (const pid of roots) {
    await kernel.tools.spawn_child_process({ pid }, { goal: 'warm' });
    await kernel.tools.send_process_message({ pid }, { to: 'self', body: 'warm' });
    await kernel.tools.read_process_messages({ pid }, {});
  }

  const results: Phase[] = [];
  results.push(
    await phase('spawn', counts, kernel, async (slot, stopAt) => {
      const pid = roots[slot] as string;
      let n = 0;
      while (Date.now() < stopAt) {
        await kernel.tools.spawn_child_process({ pid }, { goal: 'work item', input: { n } });
        n += 1;
      }
      return n;
    }),
  );
  // The same spawns in batches (spawn_children): an operation is one child, so ops/s is
  // spawns/s and script_calls_per_op is Redis script calls per child, beside the single spawns.
  for (const size of BATCH_SIZES) {
    results.push(
      await phase(`spawn_children x${size} (per child)`, counts, kernel, async (slot, stopAt) => {
        const pid = roots[slot] as string;
        let n = 0;
        while (Date.now() < stopAt) {
          const children = Array.from({ length: size }, (_, i) => ({
            goal: 'work item',
            input: { n: n + i },
          }));
          const spawned = await kernel.tools.spawn_children({ pid }, { children });
          n += spawned.children.length;
        }
        return n;
      }),
    );
  }
  results.push(
    await phase('send+read pair', counts, kernel, async (slot, stopAt) => {
      const pid = roots[slot] as string;
      let n = 0;
      while (Date.now() < stopAt) {
        await kernel.tools.send_process_message({ pid }, { to: 'self', channel: 'bench', body: 'ping' });
        const read = await kernel.tools.read_process_messages({ pid }, { channel: 'bench' });
        if (read.messages.length !== 1) throw new Error('lost a message');
        n += 1;
      }
      return n;
    }),
  );

  // ready waits: each root gets one finished child, then waits on it again and again
  const finished: string[] = [];
  for (const pid of roots) {
    const child = await kernel.tools.spawn_child_process({ pid }, { goal: 'done' });
    const claim = await kernel.worker.claim(child.pid, 1, {
      workerId: 'bench',
      tokenHash: mintToken(child.pid).tokenHash,
      leaseMs: 60_000,
    });
    await kernel.worker.complete(child.pid, 1, claim.fence, {
      terminal: { type: 'captured' },
      report: 'ok',
      usage: { prompt_tokens: 1, completion_tokens: 1, steps: 1, wall_ms: 1 },
    });
    finished.push(child.pid);
  }
  results.push(
    await phase('ready wait', counts, kernel, async (slot, stopAt) => {
      const pid = roots[slot] as string;
      const child = finished[slot] as string;
      let n = 0;
      while (Date.now() < stopAt) {
        const result = await kernel.tools.wait_child_process({ pid }, { child_pid: child });
        if (!result.ready) throw new Error('not ready');
        n += 1;
      }
      return n;
    }),
  );

  const info = await redis.info('server');
  const report = {
    benchmark: 'kernel',
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      cpu_model: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      redis: /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown',
    },
    method:
      `One Node process, one ioredis connection, ${CONCURRENCY} concurrent callers (each its own root process) ` +
      `for ${SECONDS}s per operation; requests pipeline on the connection. Round trips are counted by wrapping ` +
      'the client’s sendCommand; script_calls_per_op excludes the status-index batches, which are reported ' +
      'separately (index_batches_per_op: many operations share one batch). Redis: a private redis-server ' +
      'without AOF started by @libos/testkit. A send+read pair is two operations (two scripts). The ' +
      'spawn_children phases count one operation per child (a call of 10 or 100 children is 10 or 100 ops).',
    results,
    targets: { spawn_per_sec: 5000, send_read_pairs_per_sec: 10000, script_calls_per_op: 1 },
  };
  console.log(JSON.stringify(report, null, 2));
  await mkdir(new URL('./results/', import.meta.url), { recursive: true });
  await writeFile(new URL('./results/kernel.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
  await kernel.close();
  redis.disconnect();
  await server.stop();
}

await main();
