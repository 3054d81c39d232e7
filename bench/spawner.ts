// One worker's launch path, measured: trivial contract children (sh bench/children/stamp.sh)
// launched by this process as a worker would, at concurrency 4, in interleaved rounds:
//   bare spawn   node:child_process.spawn, request on stdin, wait for the exit, read the result
//   bare execa   the same through execa (the baseline bench/cluster.ts used to divide by)
//   local none   contractRun in this process, unconfined (the launch path before the spawner)
//   local strict contractRun in this process, in its sandbox (uid, bwrap, cgroups, rlimits)
//   spawner none / spawner strict   Spawner.run: the runner and sandbox in the spawner process
// For each: children/s, the time this process's event loop spends blocked in spawn calls per
// launch (the fork), its busy time per launch (eventLoopUtilization),
// the longest event-loop stall seen (monitorEventLoopDelay max), CPU per child by part (this
// process, the spawner, the children and their launchers), and launch latency at concurrency 1
// (call → the child's first instruction, and its exit → the result back, from its own clock).
//   node --import tsx --conditions=@libos/source bench/spawner.ts [--children N] [--rounds N]
// Needs root, bubblewrap and writable cgroups for the strict modes (what CI has).
import { ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { encodeRequestLine } from '@libos/contract';
import { contractRun } from '@libos/runner';
import { DEFAULT_LIMITS, Sandbox, type SandboxSettings, Spawner } from '@libos/sandbox';
import { execa } from 'execa';
import { nowNs } from './lib/clock.js';
import { quantile } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    children: { type: 'string', default: '300' },
    latency: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '4' },
  },
});
const N = Number(values.children);
const LATENCY = Number(values.latency);
const ROUNDS = Number(values.rounds);
const CONCURRENCY = Number(values.concurrency);
const STAMP = fileURLToPath(new URL('./children/stamp.sh', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'spawner-bench-'));
chmodSync(work, 0o755);
const settings = (mode: 'none' | 'strict'): SandboxSettings => ({
  mode,
  uids: mode === 'none' ? { first: 32_000, last: 32_049 } : { first: 32_100, last: 32_149 },
  lockDir: join(work, `.locks-${mode}`),
  runtime: [],
  hide: [],
  cgroupName: 'libos-bench',
  bwrap: 'bwrap',
  prlimit: '/usr/bin/prlimit',
});
const confine = {
  cwd: work,
  paths: [],
  runtime: [dirname(STAMP)],
  limits: DEFAULT_LIMITS,
  network: 'host' as const,
};
const launch = (i: number) => ({
  command: 'sh',
  args: [STAMP, '{result_file}'],
  input: {},
  kind: 'stamp',
  id: `b${i}`,
  deadlineMs: 30_000,
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
});

// The synchronous part of every spawn in this process (the fork, and the wait for the child's
// exec): the time this event loop is blocked by launching.
let forkBlockMs = 0;
// (ChildProcess#spawn is Node's own, undocumented and untyped: what every spawn calls.)
const proto = ChildProcess.prototype as unknown as { spawn: (...args: unknown[]) => unknown };
const ownSpawn = proto.spawn;
proto.spawn = function (this: ChildProcess, ...args: unknown[]) {
  const at = performance.now();
  try {
    return ownSpawn.apply(this, args);
  } finally {
    forkBlockMs += performance.now() - at;
  }
};

const strictSandbox = Sandbox.create(settings('strict'));
const spawners = {
  none: await Spawner.start(settings('none'), { PATH: process.env.PATH, TMPDIR: tmpdir() }),
  strict: await Spawner.start(settings('strict'), { PATH: process.env.PATH, TMPDIR: tmpdir() }),
};

type Output = { start_ns: number; end_ns: number };
type One = (i: number) => Promise<Output>;
const modes: Record<string, { one: One; spawner?: Spawner }> = {
  'bare spawn': {
    one: (i) =>
      new Promise((resolve, reject) => {
        const path = join(work, `r${i}.json`);
        const child = spawn('sh', [STAMP, path], { stdio: ['pipe', 'ignore', 'inherit'] });
        child.stdin.end(encodeRequestLine({ request_id: `b${i}`, kind: 'stamp', input: {} }));
        child.once('error', reject);
        child.once('exit', () => {
          const doc = JSON.parse(readFileSync(path, 'utf8')) as { output: Output };
          rmSync(path);
          resolve(doc.output);
        });
      }),
  },
  'bare execa': {
    one: async (i) => {
      const path = join(work, `e${i}.json`);
      await execa('sh', [STAMP, path], {
        input: encodeRequestLine({ request_id: `b${i}`, kind: 'stamp', input: {} }),
      });
      const doc = JSON.parse(readFileSync(path, 'utf8')) as { output: Output };
      rmSync(path);
      return doc.output;
    },
  },
  'local none': { one: async (i) => captured(await contractRun(launch(i))) },
  'spawner none': { one: async (i) => captured(await spawners.none.run(launch(i))), spawner: spawners.none },
  'local strict': {
    one: async (i) =>
      captured(await contractRun({ ...launch(i), confinement: strictSandbox.confine(confine) })),
  },
  'spawner strict': {
    one: async (i) => captured(await spawners.strict.run({ ...launch(i), confine })),
    spawner: spawners.strict,
  },
};

function captured(result: { terminal: { type: string }; report?: unknown }): Output {
  if (result.terminal.type !== 'captured') throw new Error(JSON.stringify(result.terminal));
  return result.report as Output;
}

/** CPU ms of a process itself and of its reaped children. */
function cpuOf(pid: number | 'self'): { self: number; children: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  const tick = (i: number) => Number(fields[i]) * 10;
  return { self: tick(11) + tick(12), children: tick(13) + tick(14) };
}

async function pool(count: number, concurrency: number, task: (i: number) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

interface Round {
  perS: number;
  forkBlockMs: number;
  loopBusyMs: number;
  stallMaxMs: number;
  cpu: { worker: number; spawner: number; children: number };
}

async function throughput(name: string): Promise<Round> {
  const { one, spawner } = modes[name]!;
  const spawnerPid = spawner?.pid;
  const before = { self: cpuOf('self'), spawner: spawnerPid ? cpuOf(spawnerPid) : undefined };
  const stalls = monitorEventLoopDelay({ resolution: 1 });
  stalls.enable();
  const elu = performance.eventLoopUtilization();
  const forkBefore = forkBlockMs;
  const started = performance.now();
  await pool(N, CONCURRENCY, one);
  const seconds = (performance.now() - started) / 1000;
  const busy = performance.eventLoopUtilization(elu);
  stalls.disable();
  const after = { self: cpuOf('self'), spawner: spawnerPid ? cpuOf(spawnerPid) : undefined };
  const spawnerCpu = after.spawner && before.spawner ? after.spawner.self - before.spawner.self : 0;
  const kids =
    after.self.children -
    before.self.children +
    (after.spawner && before.spawner ? after.spawner.children - before.spawner.children : 0);
  return {
    perS: N / seconds,
    forkBlockMs: (forkBlockMs - forkBefore) / N,
    loopBusyMs: busy.active / N,
    stallMaxMs: stalls.max / 1e6,
    cpu: { worker: (after.self.self - before.self.self) / N, spawner: spawnerCpu / N, children: kids / N },
  };
}

/** Call → the child's first instruction, and its exit → the result back here (its own clock). */
async function latency(name: string): Promise<{ start: number[]; back: number[] }> {
  const { one } = modes[name]!;
  const start: number[] = [];
  const back: number[] = [];
  for (let i = 0; i < LATENCY; i++) {
    const at = nowNs();
    const output = await one(100_000 + i);
    back.push(Number(nowNs() - BigInt(output.end_ns)) / 1e6);
    start.push(Number(BigInt(output.start_ns) - at) / 1e6);
  }
  return { start, back };
}

const median = (xs: number[]) => quantile(xs, 0.5);

try {
  for (const name of Object.keys(modes)) await pool(30, CONCURRENCY, modes[name]!.one); // warm-up
  const rounds: Record<string, Round[]> = Object.fromEntries(Object.keys(modes).map((name) => [name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const name of Object.keys(modes)) rounds[name]!.push(await throughput(name));
  }
  const lat: Record<string, { start: number[]; back: number[] }> = {};
  for (const name of Object.keys(modes)) lat[name] = await latency(name);
  const bare = median(rounds['bare spawn']!.map((r) => r.perS));
  const execaRate = median(rounds['bare execa']!.map((r) => r.perS));
  const f = (x: number, d = 2) => x.toFixed(d);
  const lines = [
    `${N} children a round × ${ROUNDS} interleaved rounds, concurrency ${CONCURRENCY}; medians of the rounds. Latency: ${LATENCY} launches one at a time.`,
    '',
    '| mode | children/s | ÷ bare spawn | ÷ bare execa | fork block / launch (ms) | loop busy / launch (ms) | longest stall (ms) | CPU/child: this process | spawner | children + launchers | total | call → child start p50 / p99 (ms) | child exit → result back p50 / p99 (ms) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...Object.keys(modes).map((name) => {
      const rs = rounds[name]!;
      const m = (pick: (r: Round) => number) => median(rs.map(pick));
      const total = m((r) => r.cpu.worker + r.cpu.spawner + r.cpu.children);
      const l = lat[name]!;
      return `| ${name} | ${f(
        m((r) => r.perS),
        0,
      )} | ${f(m((r) => r.perS) / bare)} | ${f(m((r) => r.perS) / execaRate)} | ${f(m((r) => r.forkBlockMs))} | ${f(m((r) => r.loopBusyMs))} | ${f(
        m((r) => r.stallMaxMs),
        1,
      )} | ${f(m((r) => r.cpu.worker))} | ${f(m((r) => r.cpu.spawner))} | ${f(m((r) => r.cpu.children))} | ${f(total)} | ${f(quantile(l.start, 0.5), 1)} / ${f(quantile(l.start, 0.99), 1)} | ${f(quantile(l.back, 0.5), 1)} / ${f(quantile(l.back, 0.99), 1)} |`;
    }),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  await spawners.none.close();
  await spawners.strict.close();
  strictSandbox.close();
  rmSync(work, { recursive: true, force: true });
}
