// How long one retention script call holds Redis, at its worst: a tree of `--children` finished,
// waited-on children, each owning `--objects` objects of `--object-bytes` and holding
// `--messages` messages, deleted by sweeps with the default bounds (100 processes and 500
// objects/keys per call). Redis's SLOWLOG (threshold 0) times every script call on the server.
// Run: node --import tsx --conditions=@libos/source bench/gc-batch.ts [--children 300]
// [--objects 20] [--object-bytes 1024] [--messages 50]. Writes bench/results/gc-batch.json.
import { mkdir, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { Kernel, mintToken } from '@libos/kernel';
import { startRedis } from '@libos/testkit';
import { Redis } from 'ioredis';

const { values } = parseArgs({
  options: {
    children: { type: 'string', default: '300' },
    objects: { type: 'string', default: '20' },
    'object-bytes': { type: 'string', default: '1024' },
    messages: { type: 'string', default: '50' },
  },
});
const CHILDREN = Number(values.children);
const OBJECTS = Number(values.objects);
const OBJECT_BYTES = Number(values['object-bytes']);
const MESSAGES = Number(values.messages);

const server = await startRedis({ own: true });
const redis = new Redis(server.url);
const kernel = new Kernel({ redis, keyPrefix: 'gcb:' });
try {
  await kernel.admin.putImage('x', { command: 'sh', args: ['{result_file}'] });
  const root = await kernel.admin.createRoot({
    goal: 'gc batch',
    image: 'x',
    retention_ms: 0,
    resource_budget: { children: CHILDREN },
  });
  const payload = 'x'.repeat(OBJECT_BYTES);
  for (let i = 0; i < CHILDREN; i++) {
    const child = await kernel.tools.spawn_child_process({ pid: root.pid }, { goal: `c${i}` });
    const claimed = await kernel.worker.claim(child.pid, 1, {
      workerId: 'w',
      tokenHash: mintToken(child.pid).tokenHash,
      leaseMs: 60_000,
    });
    await Promise.all([
      ...Array.from({ length: OBJECTS }, () =>
        kernel.tools.create_object({ pid: child.pid }, { payload, root: false }),
      ),
      ...Array.from({ length: MESSAGES }, () =>
        kernel.tools.send_process_message({ pid: root.pid }, { to: child.pid, body: 'm'.repeat(200) }),
      ),
    ]);
    await kernel.worker.complete(child.pid, 1, claimed.fence, {
      terminal: { type: 'captured' },
      report: 'done',
      usage: { prompt_tokens: 0, completion_tokens: 0, steps: 0, wall_ms: 1 },
    });
    await kernel.tools.wait_child_process({ pid: root.pid }, { child_pid: child.pid, block: false });
  }
  const keysBefore = await redis.dbsize();
  await redis.config('SET', 'slowlog-log-slower-than', '0');
  await redis.config('SET', 'slowlog-max-len', '100000');
  await redis.slowlog('RESET');
  let deleted = 0;
  for (let i = 0; i < 100 && deleted < CHILDREN; i++) deleted += (await kernel.retention.sweep()).deleted;
  const log = (await redis.slowlog('GET', 100000)) as [number, number, number, string[]][];
  await redis.config('SET', 'slowlog-log-slower-than', '10000');
  const calls = log.filter(([, , , args]) => args[0]?.toLowerCase() === 'evalsha');
  const scripts = calls.map(([, , micros]) => micros).sort((a, b) => a - b);
  const slowest = calls
    .sort((a, b) => b[2] - a[2])
    .slice(0, 5)
    .map(([, , micros, args]) => ({ micros, key: args[3], argv: (args[5] ?? args[4] ?? '').slice(0, 60) }));
  const result = {
    children: CHILDREN,
    objects_per_child: OBJECTS,
    object_bytes: OBJECT_BYTES,
    messages_per_child: MESSAGES,
    deleted,
    keys_before: keysBefore,
    keys_after: await redis.dbsize(),
    script_calls: scripts.length,
    script_us_max: scripts.at(-1),
    script_us_p50: scripts[Math.floor(scripts.length / 2)],
    slowest,
    load_average: (await import('node:os')).loadavg()[0],
  };
  console.log(JSON.stringify(result, null, 2));
  await mkdir(new URL('./results/', import.meta.url), { recursive: true });
  await writeFile(
    new URL('./results/gc-batch.json', import.meta.url),
    `${JSON.stringify(result, null, 2)}\n`,
  );
} finally {
  await kernel.close();
  redis.disconnect();
  await server.stop();
}
