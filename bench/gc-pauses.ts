// The parts' garbage collections while children run one at a time, and what they do to the
// latencies: a cluster as `libos up` runs it (redis-server over its unix socket, a coordinator, 2
// workers × 4, built parts, logs at warn), each part's V8 printing a line per collection
// (`lib/gc-trace.mjs`: `--trace-gc-nvp`); `--samples` stamp children (bash stamp.bash) through
// the SDK, spawn then wait, one at a time (or `--in-flight` such loops side by side: the
// workers run 8 at once). Prints per part: scavenges and full collections, their
// pauses (p50, max, total), the bytes a scavenge promoted to the old generation (a young object
// kept past two scavenges; what makes scavenges slow); and the spawn → start and exit → wake
// p50 / p99 of the same run. A scavenge of a part on a child's path is a pause of that child.
//   npm run build, then: node --import tsx --conditions=@libos/source bench/gc-pauses.ts
//   [--samples 1000] [--in-flight 1] [--isolation none|auto]
// Writes bench/results/gc-pauses[-isolation-auto][-<in-flight>].json.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { msBetween, nowNs } from './lib/clock.js';
import { startBenchCluster } from './lib/cluster.js';
import { collections } from './lib/gc-log.js';
import { CHILD_SCRIPTS } from './lib/loops.js';
import { quantile } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    samples: { type: 'string', default: '1000' },
    'in-flight': { type: 'string', default: '1' },
    isolation: { type: 'string', default: 'none' },
  },
});
const SAMPLES = Number(values.samples);
const WARM_UP = 50;
const IN_FLIGHT = Number(values['in-flight']);
const ISOLATION = values.isolation === 'auto' ? 'auto' : 'none';
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const LOGS = mkdtempSync(join(tmpdir(), 'libos-gc-pauses-'));
const TRACE = { NODE_OPTIONS: `--import=${fileURLToPath(new URL('./lib/gc-trace.mjs', import.meta.url))}` };

const cluster = await startBenchCluster({
  isolation: ISOLATION,
  logDir: LOGS,
  coordinatorEnv: TRACE,
  workerEnv: TRACE,
});
const toStart: number[] = [];
const toWake: number[] = [];
// What each part's log held before the measured children: the start and the warm-up's collections.
let before: Record<string, number> = {};
const logs = () =>
  Object.fromEntries(
    readdirSync(LOGS).map((name) => [name.replace(/\.log$/, ''), readFileSync(join(LOGS, name), 'utf8')]),
  );
try {
  await cluster.admin.putImage('stamp', {
    command: 'bash',
    args: [CHILD_SCRIPTS.stampBash, '{result_file}'],
    deadline_ms: 30_000,
  });
  const { client } = await cluster.root('gc pauses', {
    goal: 'gc pauses',
    resource_budget: { children: SAMPLES + WARM_UP + 10 },
  });
  const one = async (i: number) => {
    const spawned = nowNs();
    const child = await client.spawn({ goal: `s${i}`, image: 'stamp' });
    const done = await client.wait({ child_pid: child.pid });
    const woke = nowNs();
    if (done.status !== 'exited' || !done.result_oid)
      throw new Error(`child ${i}: ${JSON.stringify(done.outcome)}`);
    const stamps = (await client.readObject({ oid: done.result_oid })).payload as {
      start_ns: number;
      end_ns: number;
    };
    return {
      toStart: msBetween(spawned, BigInt(stamps.start_ns)),
      toWake: msBetween(BigInt(stamps.end_ns), woke),
    };
  };
  for (let i = 0; i < WARM_UP; i++) await one(i);
  before = Object.fromEntries(Object.entries(logs()).map(([part, log]) => [part, log.length]));
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < SAMPLES) {
        const sample = await one(WARM_UP + next++);
        toStart.push(sample.toStart);
        toWake.push(sample.toWake);
      }
    }),
  );
} finally {
  await cluster.stop();
}

const parts = Object.entries(logs())
  .filter(([part]) => before[part] !== undefined)
  .map(([part, log]) => {
    const all = collections(log.slice(before[part]));
    const scavenges = all.filter((c) => c.kind === 'scavenge');
    const full = all.filter((c) => c.kind === 'full');
    const pauses = scavenges.map((c) => c.pauseMs);
    const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
    return {
      part,
      scavenges: scavenges.length,
      scavenge_pause_ms: {
        p50: +quantile(pauses, 0.5).toFixed(2),
        max: +Math.max(0, ...pauses).toFixed(2),
        total: +sum(pauses).toFixed(1),
      },
      promoted_kib_per_scavenge: +(
        sum(scavenges.map((c) => c.promoted)) /
        Math.max(1, scavenges.length) /
        1024
      ).toFixed(0),
      full_collections: full.length,
      full_pause_ms_total: +sum(full.map((c) => c.pauseMs)).toFixed(1),
    };
  });
rmSync(LOGS, { recursive: true, force: true });
const latency = {
  spawn_to_start_ms: { p50: +quantile(toStart, 0.5).toFixed(2), p99: +quantile(toStart, 0.99).toFixed(2) },
  exit_to_wake_ms: { p50: +quantile(toWake, 0.5).toFixed(2), p99: +quantile(toWake, 0.99).toFixed(2) },
};
const lines = [
  `${SAMPLES} stamp children, ${IN_FLIGHT} at a time (after ${WARM_UP} one at a time), isolation ${ISOLATION}; collections of each part over them`,
  '',
  '| part | scavenges | pause p50 (ms) | max | total | promoted a scavenge (KiB) | full collections | their pauses (ms) |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ...parts.map(
    (p) =>
      `| ${p.part} | ${p.scavenges} | ${p.scavenge_pause_ms.p50} | ${p.scavenge_pause_ms.max} | ${p.scavenge_pause_ms.total} | ${p.promoted_kib_per_scavenge} | ${p.full_collections} | ${p.full_pause_ms_total} |`,
  ),
  '',
  `spawn → child start p50 / p99: ${latency.spawn_to_start_ms.p50} / ${latency.spawn_to_start_ms.p99} ms; child exit → wait wake: ${latency.exit_to_wake_ms.p50} / ${latency.exit_to_wake_ms.p99} ms`,
];
process.stdout.write(`${lines.join('\n')}\n`);
await mkdir(RESULTS, { recursive: true });
await writeFile(
  join(
    RESULTS,
    `gc-pauses${ISOLATION === 'auto' ? '-isolation-auto' : ''}${IN_FLIGHT > 1 ? `-${IN_FLIGHT}` : ''}.json`,
  ),
  `${JSON.stringify({ samples: SAMPLES, in_flight: IN_FLIGHT, isolation: ISOLATION, parts, latency }, null, 2)}\n`,
);
