// Where one child's spawn → start and exit → wake go, part by part: a cluster as `libos up` runs
// it (redis-server over its unix socket, a coordinator, 2 workers × 4, built parts) with every
// part logging at debug, one stamp child at a time through the SDK. Each segment is read off
// clocks on one host: this process's, the child's own stamps (ns) and the times of the parts' debug
// lines (pino, ms): the coordinator's `request completed` (with Fastify's elapsed time), a
// worker's `attempt claimed`, `child spawned` and `attempt completed`. Those are ms clocks, so a
// segment's mean is good to a fraction of a ms over the samples; its p50 and p99 to about 1 ms.
//   npm run build, then: node --import tsx --conditions=@libos/source bench/latency-parts.ts
//   [--samples 300] [--isolation auto|none] [--child bash|sh]
// Writes bench/results/latency-parts[-isolation-none][-sh].json.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Cluster } from '@libos/e2e';
import { summarize } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    samples: { type: 'string', default: '300' },
    isolation: { type: 'string', default: 'auto' },
    child: { type: 'string', default: 'bash' },
  },
});
const SAMPLES = Number(values.samples);
const WARM_UP = 30;
const ISOLATION = values.isolation === 'none' ? 'none' : 'auto';
// bash stamp.bash (the default): stamps from bash's clock, nothing forked, so the start stamp is
// the child's first instruction; `--child sh`: sh stamp.sh, whose stamps come from date(1)
// (its fork and exec count as spawn → start, as they did before).
const CHILD =
  values.child === 'sh'
    ? { command: 'sh', script: fileURLToPath(new URL('./children/stamp.sh', import.meta.url)) }
    : { command: 'bash', script: fileURLToPath(new URL('./children/stamp.bash', import.meta.url)) };
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const LOGS = mkdtempSync(join(tmpdir(), 'libos-latency-parts-'));

/** Epoch ms with a sub-ms part (the parts' log times are Date.now(), in whole ms). */
const nowMs = () => performance.timeOrigin + performance.now();

process.env.E2E_FROM_DIST = '1';
const cluster = await Cluster.start({
  workers: 2,
  concurrency: 4,
  fsync: 'everysec',
  unixSocket: true,
  logDir: LOGS,
  coordinatorEnv: { LIBOS_LOG_LEVEL: 'debug' },
  workerEnv: { LIBOS_LOG_LEVEL: 'debug', LIBOS_ISOLATION: ISOLATION },
});
type Sample = { pid: string; called: number; answered: number; woke: number; start: number; end: number };
const samples: Sample[] = [];
try {
  await cluster.admin.putImage('stamp', {
    command: CHILD.command,
    args: [CHILD.script, '{result_file}'],
    deadline_ms: 30_000,
  });
  const { client } = await cluster.root('latency parts', {
    goal: 'latency parts',
    resource_budget: { children: SAMPLES + WARM_UP + 10 },
  });
  for (let i = 0; i < WARM_UP + SAMPLES; i++) {
    const called = nowMs();
    const child = await client.spawn({ goal: `s${i}`, image: 'stamp' });
    const answered = nowMs();
    const done = await client.wait({ child_pid: child.pid });
    const woke = nowMs();
    if (done.status !== 'exited' || !done.result_oid)
      throw new Error(`sample ${i}: ${JSON.stringify(done.outcome)}`);
    const stamps = (await client.readObject({ oid: done.result_oid })).payload as {
      start_ns: number;
      end_ns: number;
    };
    if (i >= WARM_UP)
      samples.push({
        pid: child.pid,
        called,
        answered,
        woke,
        start: stamps.start_ns / 1e6,
        end: stamps.end_ns / 1e6,
      });
  }
} finally {
  await cluster.stop();
}

// The first time each part logged each message about each process.
const seen = new Map<string, Record<string, number>>();
const handled: Record<string, number[]> = {};
for (const file of readdirSync(LOGS)) {
  for (const line of readFileSync(join(LOGS, file), 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: { pid?: string; msg?: string; time?: number; url?: string; ms?: number };
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    if (entry.msg === 'request completed' && entry.url?.startsWith('/v1/tools/') && entry.ms !== undefined) {
      handled[entry.url] = [...(handled[entry.url] ?? []), entry.ms];
    }
    if (!entry.pid || !entry.msg || entry.time === undefined) continue;
    const times = seen.get(entry.pid) ?? {};
    times[entry.msg] ??= entry.time;
    seen.set(entry.pid, times);
  }
}
rmSync(LOGS, { recursive: true, force: true });

const segments: Record<string, number[]> = {};
const add = (name: string, value: number) => {
  if (Number.isFinite(value)) segments[name] = [...(segments[name] ?? []), value];
};
for (const s of samples) {
  // A line the logs lack makes its segments NaN, which `add` leaves out.
  const at = (message: string) => seen.get(s.pid)?.[message] ?? Number.NaN;
  const [claimed, spawned, completed] = ['attempt claimed', 'child spawned', 'attempt completed'].map(at) as [
    number,
    number,
    number,
  ];
  add('call → spawn answered (SDK)', s.answered - s.called);
  add('spawn answered → attempt claimed (queue, claim, index)', claimed - s.answered);
  add('attempt claimed → child spawned (worker, spawner)', spawned - claimed);
  add('child spawned → child start (exec, sandbox)', s.start - spawned);
  add('**call → child start**', s.start - s.called);
  add('child end → attempt completed (reap, result, complete script)', completed - s.end);
  add('attempt completed → wait answered (wake, HTTP)', s.woke - completed);
  add('**child end → wait answered**', s.woke - s.end);
}
const f = (x: number) => x.toFixed(2);
const segmentStats = Object.fromEntries(Object.entries(segments).map(([name, xs]) => [name, summarize(xs)]));
const handledStats = Object.fromEntries(Object.entries(handled).map(([url, xs]) => [url, summarize(xs)]));
const lines = [
  `isolation ${ISOLATION}; ${SAMPLES} stamp children (${CHILD.command}) one at a time after ${WARM_UP} unmeasured, parts at debug`,
  '',
  '| segment | mean (ms) | p50 | p99 | n |',
  '| --- | ---: | ---: | ---: | ---: |',
  ...Object.entries(segmentStats).map(
    ([name, s]) => `| ${name} | ${f(s.mean)} | ${f(s.p50)} | ${f(s.p99)} | ${s.n} |`,
  ),
  '',
  '| the coordinator handling (Fastify elapsed) | mean (ms) | p50 | p99 | n |',
  '| --- | ---: | ---: | ---: | ---: |',
  ...Object.entries(handledStats).map(
    ([url, s]) => `| ${url} | ${f(s.mean)} | ${f(s.p50)} | ${f(s.p99)} | ${s.n} |`,
  ),
];
process.stdout.write(`${lines.join('\n')}\n`);
await mkdir(RESULTS, { recursive: true });
await writeFile(
  join(
    RESULTS,
    `latency-parts${ISOLATION === 'none' ? '-isolation-none' : ''}${CHILD.command === 'sh' ? '-sh' : ''}.json`,
  ),
  `${JSON.stringify({ date: new Date().toISOString(), isolation: ISOLATION, samples: SAMPLES, segments: segmentStats, handled: handledStats }, null, 2)}\n`,
);
