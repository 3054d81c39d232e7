import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { type ChildLogPage, childLogPageSchema } from '@libos/protocol';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  CLI_SOURCE,
  Cluster,
  eventually,
  READ_REQUEST,
  type Scratch,
  scratch,
  shImage,
  waitForFile,
  writeResult,
} from '../src/index.js';

/** What a stored line costs against the bound: its bytes, its newline and 32 for its keeping. */
const cost = (line: string) => Buffer.byteLength(line) + 1 + 32;
const MiB = 1024 * 1024;
const FLOOD_BYTES = 200 * MiB;
/**
 * The worker's peak RSS may grow this much over a 200 MiB flood. Its own bound is 1 MiB waiting
 * and one batch in flight; the rest is the flood read through 64 KiB pipe buffers that V8 frees
 * at its next collection (17–58 MB measured, varying with the machine's load). A store that kept
 * the flood would grow by more than the flood's 200 MiB.
 */
const RSS_GROWTH_BOUND = 96 * MiB;

let cluster: Cluster;
let files: Scratch;

const done = writeResult('"status":"completed","output":1');

beforeAll(async () => {
  files = await scratch();
  // Worker 0 keeps the default bound (1 MiB); worker 1, on pool `small`, keeps 8 KiB.
  // The production lease (10 s): a flood on a loaded 2-core machine must not cost the child its lease.
  cluster = await Cluster.start({
    workers: 1,
    captureWorkerOutput: true,
    workerEnv: { LIBOS_LEASE_MS: '10000' },
  });
  await cluster.startWorker(1, { LIBOS_POOLS: 'small', LIBOS_CHILD_LOG_BYTES: '8192' });
  await cluster.admin.putImage('chatty', {
    ...shImage(
      `${READ_REQUEST}; echo "first to stderr" >&2; echo "first to stdout"; ${waitForFile('"$2/go"', 0.05)}; echo "second to stderr" >&2; ${done}`,
      files.dir,
    ),
  });
  // 200 MiB of 200-byte lines on stderr, as fast as the pipe takes them.
  await cluster.admin.putImage('flood', {
    ...shImage(
      `${READ_REQUEST}; yes "$(printf '%0199d' 7)" | head -c ${FLOOD_BYTES} >&2; echo "after the flood" >&2; ${done}`,
    ),
    deadline_ms: 120_000,
  });
  // A few lines each way: the worker's first child loads code the flood would otherwise be charged for.
  await cluster.admin.putImage('warm', {
    ...shImage(
      `${READ_REQUEST}; i=0; while [ $i -lt 20 ]; do echo "warm $i"; echo "warm $i" >&2; i=$((i+1)); done; ${done}`,
    ),
  });
  await cluster.admin.putImage('quiet', { ...shImage(`${READ_REQUEST}; ${done}`) });
  await cluster.admin.putImage('numbered', {
    ...shImage(
      `${READ_REQUEST}; i=0; while [ $i -lt 500 ]; do echo "numbered line $i" >&2; i=$((i+1)); done; ${done}`,
    ),
    pool: 'small',
  });
}, 60_000);
afterAll(async () => {
  const strays = await cluster?.stop();
  await files?.remove();
  expect(strays ?? []).toEqual([]);
});

/** A launched root on `image`; resolves with its pid once it is running. */
async function launch(image: string): Promise<string> {
  const { pid } = await cluster.admin.createProcess({ goal: image, image, launch: true, cwd: files.dir });
  return pid;
}

/** `libos <args>` against the cluster: its stdout (and stderr) as they come, and its exit. */
function cli(args: string[]): {
  process: ChildProcess;
  out: () => string;
  err: () => string;
  exited: Promise<number | null>;
} {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--conditions=@libos/source',
      CLI_SOURCE,
      ...args,
      '--url',
      cluster.url,
      '--admin-token',
      ADMIN_TOKEN,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
  );
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      resolve(code);
    }),
  );
  return { process: child, out: () => out, err: () => err, exited };
}

async function page(pid: string, query = ''): Promise<ChildLogPage> {
  const response = await fetch(`${cluster.url}/v1/admin/processes/${pid}/logs${query}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect(response.status).toBe(200);
  return childLogPageSchema.parse(await response.json());
}

/** The whole log of the latest attempt, page by page. */
async function wholeLog(pid: string): Promise<ChildLogPage> {
  let current = await page(pid, '?limit=10000');
  const lines = [...current.lines];
  while (current.has_more) {
    current = await page(pid, `?limit=10000&after=${current.next}`);
    lines.push(...current.lines);
  }
  return { ...current, lines };
}

function vmKb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1]);
}

describe('child logs on a cluster', () => {
  it('shows a child’s stderr and stdout live with `libos logs -f`, which ends with the attempt', async () => {
    const pid = await launch('chatty');
    const follow = cli(['logs', pid, '-f']);
    // live: the first lines arrive while the child still waits for its go
    await eventually(() => (follow.out().includes('first to stdout') ? true : undefined), {
      withinMs: 30_000,
      what: 'the first lines on `libos logs -f`',
    });
    expect(follow.out()).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z stderr first to stderr$/m);
    expect(follow.out()).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z stdout first to stdout$/m);
    expect((await cluster.admin.getProcess(pid)).status).toBe('running');
    expect(follow.process.exitCode).toBeNull();
    await files.touch('go');
    expect(await follow.exited).toBe(0); // it ends by itself once the attempt has ended
    expect(follow.out()).toMatch(/ stderr second to stderr$/m);
    expect((await cluster.admin.waitProcess(pid)).status).toBe('exited');

    const once = cli(['logs', pid]);
    expect(await once.exited).toBe(0);
    const printed = once.out().trim().split('\n');
    expect(printed.map((line) => line.split(' ').slice(1).join(' ')).sort()).toEqual(
      ['stderr first to stderr', 'stderr second to stderr', 'stdout first to stdout'].sort(),
    );
    const json = cli(['logs', pid, '--attempt', '1', '--json']);
    expect(await json.exited).toBe(0);
    expect(childLogPageSchema.parse(JSON.parse(json.out()))).toMatchObject({ pid, attempt: 1, ended: true });

    const route = await page(pid);
    expect(route).toMatchObject({ pid, attempt: 1, ended: true, dropped_bytes: 0 });
    expect(route.lines.filter((l) => l.stream === 'stderr').map((l) => l.line)).toEqual([
      'first to stderr',
      'second to stderr',
    ]);
    expect(route.lines.filter((l) => l.stream === 'stdout').map((l) => l.line)).toEqual(['first to stdout']);
  }, 120_000);

  it('keeps a 200 MiB stderr flood within the bound: the worker’s memory, Redis’s traffic and the log', async () => {
    const worker = cluster.workers[0]!.pid!;
    const warm = await launch('warm');
    const warmed = await cluster.admin.waitProcess(warm);
    expect(warmed.status, JSON.stringify(warmed.outcome)).toBe('exited');
    const redis = new Redis(cluster.redis.url);
    const netIn = async () => Number(/total_net_input_bytes:(\d+)/.exec(await redis.info('stats'))?.[1]);
    const hwmBefore = vmKb(worker, 'VmHWM');
    const inBefore = await netIn();
    const started = Date.now();
    const pid = await launch('flood');
    const flooded = await cluster.admin.waitProcess(pid);
    expect(
      flooded.status,
      `${JSON.stringify(flooded.outcome)}; worker: ${cluster.workerOutput[0]?.text.slice(-2000)}`,
    ).toBe('exited');
    const seconds = (Date.now() - started) / 1000;
    const hwmAfter = vmKb(worker, 'VmHWM');
    const redisIn = (await netIn()) - inBefore;
    await redis.quit();
    const log = await wholeLog(pid);
    const stored = log.lines.reduce((sum, l) => sum + cost(l.line), 0);
    process.stdout.write(
      `flood: ${seconds.toFixed(1)} s; worker VmHWM ${hwmBefore} -> ${hwmAfter} kB; Redis took ${(redisIn / MiB).toFixed(1)} MiB; ` +
        `log ${log.lines.length} lines, ${stored} bytes counted, ${log.dropped_bytes} dropped\n`,
    );
    expect((hwmAfter - hwmBefore) * 1024).toBeLessThan(RSS_GROWTH_BOUND);
    // the log: within its bound, newest kept, every byte either kept or counted as dropped
    expect(stored).toBeLessThanOrEqual(MiB);
    expect(log.lines.at(-1)?.line).toBe('after the flood');
    const kept = log.lines.reduce((sum, l) => sum + Buffer.byteLength(l.line) + 1, 0);
    expect(log.dropped_bytes + kept).toBe(FLOOD_BYTES + 'after the flood\n'.length);
    // Redis saw a bounded share of it: about one bound (1 MiB) a second, not the flood
    expect(redisIn).toBeLessThan((seconds + 2) * 1.25 * MiB);
    expect(redisIn).toBeLessThan(FLOOD_BYTES / 2);
    // the dropped marker, as the CLI prints it
    const shown = cli(['logs', pid]);
    expect(await shown.exited).toBe(0);
    expect(shown.out().split('\n')[0]).toBe(
      `… ${log.dropped_bytes} bytes of attempt 1's oldest output dropped (the log keeps its newest) …`,
    );
    // none of it reached the worker's own output
    const own = cluster.workerOutput[0]!;
    expect(own.bytes).toBeLessThan(64 * 1024);
    expect(own.text).not.toContain('0000000007');
    expect(own.text).not.toContain('first to stderr');
  }, 240_000);

  it('refuses an unknown process or attempt in one line', async () => {
    const pid = await launch('numbered');
    expect((await cluster.admin.waitProcess(pid)).status).toBe('exited');
    const unknown = cli(['logs', `${pid}.9`]);
    expect(await unknown.exited).not.toBe(0);
    expect(unknown.err()).toBe(`libos: not found: no such process ${pid}.9\n`);
    const attempt = cli(['logs', pid, '--attempt', '4']);
    expect(await attempt.exited).not.toBe(0);
    expect(attempt.err().trim().split('\n')).toHaveLength(1);
    expect(attempt.err()).toContain(`${pid} has no attempt 4 (its latest is 1)`);
    const word = cli(['logs', pid, '--attempt', 'last', '-f']);
    expect(await word.exited).not.toBe(0);
    expect(word.err()).toBe('libos: --attempt must be a whole number from 1, not "last"\n');
  }, 120_000);

  it('says on stderr when an attempt wrote nothing, leaving stdout empty', async () => {
    const pid = await launch('quiet');
    expect((await cluster.admin.waitProcess(pid)).status).toBe('exited');
    const shown = cli(['logs', pid]);
    expect(await shown.exited).toBe(0);
    expect(shown.out()).toBe('');
    expect(shown.err()).toBe(`libos: attempt 1 of ${pid} wrote nothing to stdout or stderr\n`);
  }, 60_000);

  it('honours LIBOS_CHILD_LOG_BYTES', async () => {
    const pid = await launch('numbered');
    expect((await cluster.admin.waitProcess(pid)).status).toBe('exited');
    const log = await wholeLog(pid);
    const lines = log.lines.map((l) => l.line);
    expect(log.lines.reduce((sum, l) => sum + cost(l.line), 0)).toBeLessThanOrEqual(8192);
    const all = Array.from({ length: 500 }, (_, i) => `numbered line ${i}`);
    expect(lines).toEqual(all.slice(500 - lines.length));
    expect(log.dropped_bytes).toBe(
      all.slice(0, 500 - lines.length).reduce((sum, l) => sum + l.length + 1, 0),
    );
    expect(cluster.workerOutput[1]?.text ?? '').not.toContain('numbered line');
  }, 120_000);
});
