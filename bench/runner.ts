// Cost of one contract launch: `contractRun` against a bare `child_process.spawn` of the same
// trivial child (examples/children/echo.sh), at concurrency 1 and 8, in interleaved rounds.
// Both sides do the work needed to get the child's answer: spawn, write the request line, drain
// stdout, wait for the exit, read the result file. contractRun adds its private directory,
// deadline, teardown and classification.
//   node --import tsx --conditions=@libos/source bench/runner.ts [--launches N] [--rounds R] [--concurrency 1,8]
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { encodeRequestLine } from '@libos/contract';
import { shChildLaunch, shChildren } from '@libos/examples';
import { contractRun } from '@libos/runner';

const { values } = parseArgs({
  options: {
    launches: { type: 'string', default: '60' },
    rounds: { type: 'string', default: '30' },
    concurrency: { type: 'string', default: '1,8' },
  },
});
const LAUNCHES = Number(values.launches);
const ROUNDS = Number(values.rounds);
const CONCURRENCY = values.concurrency.split(',').map(Number);
const INPUT = { query: 'bench' };

type Mode = 'spawn' | 'contractRun';

async function viaContractRun(id: string): Promise<void> {
  const result = await contractRun({
    ...shChildLaunch('echo'),
    input: INPUT,
    kind: 'echo',
    id,
    deadlineMs: 30_000,
  });
  if (result.terminal.type !== 'captured') throw new Error(`contractRun: ${JSON.stringify(result.terminal)}`);
}

let scratch = '';
async function viaSpawn(id: string): Promise<void> {
  const path = join(scratch, `${id}.json`);
  const child = spawn('sh', [shChildren.echo, path], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve, reject) => {
    child.once('exit', () => resolve());
    child.once('error', reject);
  });
  child.stdout.resume();
  child.stdin.on('error', () => undefined);
  child.stdin.write(encodeRequestLine({ request_id: id, kind: 'echo', input: INPUT }));
  await exited;
  const doc = JSON.parse(await readFile(path, 'utf8')) as { status?: string };
  if (doc.status !== 'completed') throw new Error(`spawn: ${JSON.stringify(doc)}`);
  child.stdin.destroy();
  await rm(path);
}

/** Runs `launches` launches with `concurrency` in flight; returns each launch's latency (ms). */
async function batch(mode: Mode, concurrency: number, launches: number, tag: string) {
  const launch = mode === 'spawn' ? viaSpawn : viaContractRun;
  const latencies: number[] = [];
  let next = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < launches) {
        const n = next++;
        const t = performance.now();
        await launch(`${tag}-${n}`);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  // This process's own CPU (user + system) per launch: the runner's cost without the child's,
  // and far less sensitive than wall time to other load on the machine.
  return { wallMs, latencies, cpuUsPerLaunch: (cpu.user + cpu.system) / launches };
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
const round2 = (n: number) => Math.round(n * 100) / 100;

async function main() {
  scratch = await mkdtemp(join(tmpdir(), 'bench-runner-'));
  const samples: Record<string, { wallMs: number; latencies: number[]; cpuUsPerLaunch: number }[]> = {};
  try {
    // Warm up both paths (module loading, first spawns, file system caches).
    for (const mode of ['spawn', 'contractRun'] as const) await batch(mode, 8, 40, `warm-${mode}`);
    for (let round = 0; round < ROUNDS; round++) {
      for (const concurrency of CONCURRENCY) {
        // Alternate which side goes first, so drift in machine load hits both equally.
        const order: Mode[] = round % 2 === 0 ? ['spawn', 'contractRun'] : ['contractRun', 'spawn'];
        for (const mode of order) {
          const key = `${mode}@${concurrency}`;
          samples[key] ??= [];
          samples[key].push(await batch(mode, concurrency, LAUNCHES, `r${round}-${key}`));
        }
      }
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }

  const rows = CONCURRENCY.flatMap((concurrency) =>
    (['spawn', 'contractRun'] as const).map((mode) => {
      const runs = samples[`${mode}@${concurrency}`] ?? [];
      const latencies = runs.flatMap((r) => r.latencies).sort((a, b) => a - b);
      const wall = runs.reduce((sum, r) => sum + r.wallMs, 0);
      const launches = runs.length * LAUNCHES;
      return {
        mode,
        concurrency,
        launches,
        meanMs: round2(latencies.reduce((s, x) => s + x, 0) / latencies.length),
        p50Ms: round2(quantile(latencies, 0.5)),
        p95Ms: round2(quantile(latencies, 0.95)),
        perSecond: round2((launches / wall) * 1000),
        parentCpuUsPerLaunch: Math.round(runs.reduce((sum, r) => sum + r.cpuUsPerLaunch, 0) / runs.length),
        // Per-round throughput, to show the spread between interleaved rounds.
        roundPerSecond: runs.map((r) => round2((LAUNCHES / r.wallMs) * 1000)),
      };
    }),
  );
  // Each round ran both sides back to back, so a round's ratio is a paired sample; the median
  // of those ratios resists bursts of load from other work on the machine better than the
  // pooled means do.
  const median = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
  };
  const ratios = CONCURRENCY.map((concurrency) => {
    const bare = rows.find((r) => r.mode === 'spawn' && r.concurrency === concurrency);
    const run = rows.find((r) => r.mode === 'contractRun' && r.concurrency === concurrency);
    if (!bare || !run) throw new Error('missing rows');
    const paired = run.roundPerSecond.map(
      (perSecond, i) => (bare.roundPerSecond[i] ?? perSecond) / perSecond,
    );
    return {
      concurrency,
      meanLatencyRatio: round2(run.meanMs / bare.meanMs),
      p50LatencyRatio: round2(run.p50Ms / bare.p50Ms),
      throughputRatio: round2(run.perSecond / bare.perSecond),
      slowerPercentPooled: round2((bare.perSecond / run.perSecond - 1) * 100),
      slowerPercentMedianRound: round2((median(paired) - 1) * 100),
      slowerPercentByRound: paired.map((ratio) => round2((ratio - 1) * 100)),
    };
  });

  console.log(
    `contractRun vs bare spawn of examples/children/echo.sh — ${ROUNDS} interleaved rounds × ${LAUNCHES} launches`,
  );
  console.log(`node ${process.version}, ${cpus().length} cpus, result dirs under ${tmpdir()}\n`);
  console.log('mode          conc  launches  mean ms  p50 ms  p95 ms  launches/s  parent CPU µs/launch');
  for (const r of rows) {
    console.log(
      `${r.mode.padEnd(12)} ${String(r.concurrency).padStart(5)} ${String(r.launches).padStart(9)} ${r.meanMs.toFixed(2).padStart(8)} ${r.p50Ms.toFixed(2).padStart(7)} ${r.p95Ms.toFixed(2).padStart(7)} ${r.perSecond.toFixed(1).padStart(11)} ${String(r.parentCpuUsPerLaunch).padStart(21)}`,
    );
  }
  console.log(
    '\nconc  mean latency  p50 latency  throughput  slower (pooled)  slower (median round)  by round',
  );
  for (const r of ratios) {
    console.log(
      `${String(r.concurrency).padStart(4)} ${r.meanLatencyRatio.toFixed(2).padStart(13)} ${r.p50LatencyRatio.toFixed(2).padStart(12)} ${r.throughputRatio.toFixed(2).padStart(11)} ${`${r.slowerPercentPooled.toFixed(1)} %`.padStart(16)} ${`${r.slowerPercentMedianRound.toFixed(1)} %`.padStart(22)}  ${r.slowerPercentByRound.map((x) => x.toFixed(1)).join(' ')}`,
    );
  }

  const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'runner.json');
  await mkdir(dirname(out), { recursive: true });
  const report = {
    bench: 'runner',
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    child: 'sh examples/children/echo.sh {result_file}',
    tmpdir: tmpdir(),
    rounds: ROUNDS,
    launchesPerRound: LAUNCHES,
    target: 'contractRun at most 10 % slower than a bare spawn',
    rows,
    ratios,
  };
  await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwrote ${out}`);
}

await main();
