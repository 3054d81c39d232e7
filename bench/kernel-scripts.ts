// What each of a child's kernel scripts costs Redis itself: the Redis time per call (INFO
// commandstats, EVALSHA's own figure, the commands the script runs included) and the commands it
// runs, for the calls a child's life makes (spawn, claim, complete, a non-blocking wait) and the
// status index batches they leave, each phase alone and in sequence on a private redis-server
// without AOF, one caller, nothing else running. The floor, `return 1` by EVAL, is measured too.
// bench/redis-calls.ts says how many of each a child sends; this says what each costs.
//   node --import tsx --conditions=@libos/source bench/kernel-scripts.ts [--children 1000]
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { Kernel, mintToken } from '@libos/kernel';
import { startRedis } from '@libos/testkit';
import { Redis } from 'ioredis';

const { values } = parseArgs({ options: { children: { type: 'string', default: '1000' } } });
const N = Number(values.children);
if (!Number.isInteger(N) || N < 1) throw new Error('--children is a positive integer');

const server = await startRedis({ own: true });
const redis = new Redis(server.url);
// Index batches only when asked (flushIndex), so each phase's window holds its own scripts only.
const kernel = new Kernel({ redis, keyPrefix: 'bench:', limits: { indexBatchMs: 3_600_000 } });

/** Commandstats as calls and µs by command, and Redis's CPU µs so far. */
async function readings(): Promise<{ commands: Map<string, { calls: number; usec: number }>; cpu: number }> {
  const commands = new Map<string, { calls: number; usec: number }>();
  for (const match of String(await redis.info('commandstats')).matchAll(
    /cmdstat_(\S+?):calls=(\d+),usec=(\d+)/g,
  )) {
    commands.set(match[1]!, { calls: Number(match[2]), usec: Number(match[3]) });
  }
  const cpu = String(await redis.info('cpu'));
  const seconds = (name: string) => Number(new RegExp(`${name}:([0-9.]+)`).exec(cpu)?.[1] ?? 0);
  return { commands, cpu: (seconds('used_cpu_sys') + seconds('used_cpu_user')) * 1e6 };
}

interface Row {
  phase: string;
  calls_per_op: number;
  usec_per_call: number;
  inner_commands_per_call: number;
  redis_cpu_usec_per_op: number;
}
const rows: Row[] = [];

/** Runs `ops` of one phase and records what EVALSHA (or EVAL) cost in its window. */
async function phase(
  name: string,
  ops: number,
  run: () => Promise<void>,
  command = 'evalsha',
): Promise<void> {
  const before = await readings();
  await run();
  const after = await readings();
  const delta = (cmd: string) => {
    const a = after.commands.get(cmd) ?? { calls: 0, usec: 0 };
    const b = before.commands.get(cmd) ?? { calls: 0, usec: 0 };
    return { calls: a.calls - b.calls, usec: a.usec - b.usec };
  };
  const own = delta(command);
  let inner = 0;
  for (const cmd of after.commands.keys()) if (cmd !== command && cmd !== 'info') inner += delta(cmd).calls;
  rows.push({
    phase: name,
    calls_per_op: +(own.calls / ops).toFixed(2),
    usec_per_call: +(own.usec / Math.max(1, own.calls)).toFixed(1),
    inner_commands_per_call: +(inner / Math.max(1, own.calls)).toFixed(1),
    redis_cpu_usec_per_op: +((after.cpu - before.cpu) / ops).toFixed(1),
  });
}

try {
  await kernel.admin.putImage('bench', { command: 'true', args: ['{result_file}'] });
  const { pid: root } = await kernel.admin.createRoot({
    goal: 'kernel scripts',
    image: 'bench',
    resource_budget: { children: 2 * N + 100 },
  });
  const caller = { pid: root };
  // Warm: the scripts loaded, the JIT of this process and Redis's own caches.
  for (let i = 0; i < 50; i++) await kernel.tools.spawn_child_process(caller, { goal: 'warm' });
  await kernel.flushIndex();

  await phase(
    'EVAL return 1 (the floor)',
    N,
    async () => {
      for (let i = 0; i < N; i++) await redis.eval('return 1', 0);
    },
    'eval',
  );
  const children: string[] = [];
  await phase('spawn', N, async () => {
    for (let i = 0; i < N; i++) {
      children.push(
        (await kernel.tools.spawn_child_process(caller, { goal: `item ${i}`, input: { i } })).pid,
      );
    }
  });
  await phase('index batches after spawn (per child)', N, () => kernel.flushIndex());
  const fences: string[] = [];
  await phase('claim', N, async () => {
    for (const pid of children) {
      const { tokenHash } = mintToken(pid);
      fences.push(
        (await kernel.worker.claim(pid, 1, { workerId: 'bench', tokenHash, leaseMs: 60_000 })).fence,
      );
    }
  });
  await phase('index batches after claim (per child)', N, () => kernel.flushIndex());
  await phase('complete', N, async () => {
    for (const [i, pid] of children.entries()) {
      await kernel.worker.complete(pid, 1, fences[i]!, {
        terminal: { type: 'captured' },
        report: { i },
        usage: { prompt_tokens: 0, completion_tokens: 0, steps: 0, wall_ms: 1 },
      });
    }
  });
  await phase('index batches after complete (per child)', N, () => kernel.flushIndex());
  await phase('wait (ready, not blocking)', N, async () => {
    for (const pid of children) {
      const done = await kernel.tools.wait_child_process(caller, { child_pid: pid, block: false });
      if (!done.ready) throw new Error(`${pid} is not ready`);
    }
  });
  await phase('index batches after wait (per child)', N, () => kernel.flushIndex());
} finally {
  await kernel.close();
  redis.disconnect();
  await server.stop();
}

const table = [
  `Kernel scripts of a child's life, ${N} calls each, sequential, one caller, private redis-server without AOF\n`,
  '| phase | calls per child | Redis µs per call | commands run per call | Redis CPU µs per child |',
  '| --- | ---: | ---: | ---: | ---: |',
  ...rows.map(
    (r) =>
      `| ${r.phase} | ${r.calls_per_op} | ${r.usec_per_call} | ${r.inner_commands_per_call} | ${r.redis_cpu_usec_per_op} |`,
  ),
];
process.stdout.write(`${table.join('\n')}\n`);
await writeFile(
  new URL('./results/kernel-scripts.json', import.meta.url),
  `${JSON.stringify({ children: N, rows }, null, 2)}\n`,
);
