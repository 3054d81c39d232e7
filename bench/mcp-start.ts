// How fast `libos mcp` is ready for an agent CLI: milliseconds from spawn to the `initialize`
// answer, and to the `tools/list` answer (the server fully loaded), for
//   - node:       a bare `node` that echoes one line (the floor: node's own start on this host);
//   - libos mcp:  `node apps/cli/bin/libos.js mcp`, the lean entry (answers initialize at once);
//   - mcp bin:    `node libs/mcp/dist/bin.js` (the same entry, as the shims wire it);
//   - whole CLI:  `node apps/cli/dist/main.js mcp`, the whole `libos` command loaded first (before).
// Interleaved rounds, so a loaded machine slows every variant alike. Needs `npm run build`.
//   npm run bench:mcp   (node --import tsx bench/mcp-start.ts [--rounds N])
import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { quantile } from './lib/stats.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '15' } } });
const ROUNDS = Number(values.rounds);
const repo = (path: string) => fileURLToPath(new URL(`../${path}`, import.meta.url));

const ECHO =
  'process.stdin.once("data",()=>process.stdout.write("{}\\n"));process.stdin.once("end",()=>process.exit(0))';
const VARIANTS: Record<string, string[]> = {
  node: ['-e', ECHO],
  'libos mcp': [repo('apps/cli/bin/libos.js'), 'mcp'],
  'mcp bin': [repo('libs/mcp/dist/bin.js')],
  'whole CLI': [repo('apps/cli/dist/main.js'), 'mcp'],
};
const ENV = {
  ...process.env,
  LIBOS_URL: 'http://127.0.0.1:9',
  LIBOS_PID: 'pbench0',
  LIBOS_TOKEN: 'bench-token',
};
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '0' } },
};

interface Sample {
  initialize: number;
  tools: number;
}

async function once(args: string[], echo: boolean): Promise<Sample> {
  const start = performance.now();
  const child = spawn(process.execPath, args, { env: ENV, stdio: ['pipe', 'pipe', 'inherit'] });
  const answers: number[] = [];
  let buffer = '';
  const done = new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      while (buffer.includes('\n')) {
        buffer = buffer.slice(buffer.indexOf('\n') + 1);
        answers.push(performance.now() - start);
        if (answers.length === 1 && !echo) {
          child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
          child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`);
        }
        if (answers.length === (echo ? 1 : 2)) resolve();
      }
    });
  });
  child.stdin.write(`${JSON.stringify(INITIALIZE)}\n`);
  await done;
  child.stdin.end();
  await new Promise((resolve) => child.once('exit', resolve));
  return { initialize: answers[0] ?? Number.NaN, tools: answers[echo ? 0 : 1] ?? Number.NaN };
}

const stats = (xs: number[]) => ({
  min: quantile(xs, 0),
  median: quantile(xs, 0.5),
  p90: quantile(xs, 0.9),
  max: quantile(xs, 1),
});

const samples: Record<string, Sample[]> = Object.fromEntries(Object.keys(VARIANTS).map((name) => [name, []]));
const loadBefore = loadavg()[0];
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, args] of Object.entries(VARIANTS)) samples[name]?.push(await once(args, name === 'node'));
}
const loadAfter = loadavg()[0];

const rows = Object.entries(samples).map(([name, list]) => ({
  variant: name,
  initialize: stats(list.map((s) => s.initialize)),
  tools_list: stats(list.map((s) => s.tools)),
}));
const ms = (n: number) => n.toFixed(0).padStart(6);
console.log(
  `libos mcp start, ${ROUNDS} interleaved rounds, load average ${loadBefore?.toFixed(1)} → ${loadAfter?.toFixed(1)}`,
);
console.log('variant       initialize ms (min / median / p90)   tools/list ms (min / median / p90)');
for (const row of rows) {
  const i = row.initialize;
  const t = row.tools_list;
  console.log(
    `${row.variant.padEnd(12)} ${ms(i.min)} ${ms(i.median)} ${ms(i.p90)}               ${ms(t.min)} ${ms(t.median)} ${ms(t.p90)}`,
  );
}
// The target (issue 13): `libos mcp` answers `initialize` in under 300 ms on this machine. A
// loaded host slows every variant alike, so the floor (bare node, same rounds) and the ratio to it
// are printed beside the figure.
const TARGET_MS = 300;
const floor = rows.find((row) => row.variant === 'node')?.initialize.median ?? Number.NaN;
const lean = rows.find((row) => row.variant === 'libos mcp')?.initialize.median ?? Number.NaN;
console.log(
  `libos mcp initialize: median ${lean.toFixed(0)} ms (target < ${TARGET_MS} ms: ${lean < TARGET_MS ? 'met' : 'missed'}); ` +
    `bare node ${floor.toFixed(0)} ms in the same rounds, ratio ${(lean / floor).toFixed(2)}; ` +
    `over the floor ${(lean - floor).toFixed(0)} ms`,
);
const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'mcp-start.json');
await mkdir(dirname(out), { recursive: true });
await writeFile(
  out,
  `${JSON.stringify({ rounds: ROUNDS, load: [loadBefore, loadAfter], target_ms: TARGET_MS, floor_ms: floor, lean_ms: lean, rows }, null, 2)}\n`,
);
console.log(`wrote ${out}`);
