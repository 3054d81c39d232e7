import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ContractRunAbortedError, contractRun } from '../src/index.js';
import { allGone, isAlive, readLines, result, scratch, sh, writeResult } from './helpers.js';

const execFileAsync = promisify(execFile);

let side: Awaited<ReturnType<typeof scratch>>;
beforeEach(async () => {
  side = await scratch();
});
afterEach(async () => {
  await side.cleanup();
});

const base = { input: { query: 'q' }, kind: 'probe', id: 'test-1' };

// Records its own pid, its result directory and three grandchildren (one a nested shell),
// all holding stdout, then waits.
const SPAWNS_AND_SLEEPS = [
  'read request',
  'echo $$ > "$2"',
  'dirname "$1" >> "$2"',
  'sleep 30 & echo $! >> "$2"',
  'sleep 30 & echo $! >> "$2"',
  `sh -c 'sleep 30 & echo $! >> "$0"; wait' "$2" &`,
  'wait',
].join('\n');

async function recorded(path: string, lines: number): Promise<{ pids: number[]; dir: string }> {
  // Generous: under load a shell takes a while to start three more processes.
  for (const until = Date.now() + 15_000; Date.now() < until; ) {
    const found = existsSync(path) ? await readLines(path) : [];
    if (found.length >= lines) {
      const [pid, dir, ...rest] = found;
      return { pids: [Number(pid), ...rest.map(Number)], dir: dir ?? '' };
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`the child did not record ${lines} lines in ${path}`);
}

describe('contractRun: teardown', () => {
  it('kills the child and its grandchildren after a timeout, and removes the directory', async () => {
    const pidsFile = side.file('pids');
    const classified = await contractRun({
      ...sh(SPAWNS_AND_SLEEPS, pidsFile),
      ...base,
      deadlineMs: 300,
      cancelGraceMs: 200,
    });
    expect(classified.terminal).toEqual({ type: 'timed_out' });
    const { pids, dir } = await recorded(pidsFile, 5);
    expect(pids).toHaveLength(4);
    expect(await allGone(pids)).toBe(true);
    expect(existsSync(dir)).toBe(false);
  });

  it('kills what the child left in its group after a normal completion too', async () => {
    const pidsFile = side.file('pids');
    const doc = result('test-1', 'completed', { output: 'done' });
    const child = `read request; echo $$ > "$2"; dirname "$1" >> "$2"; sleep 30 >/dev/null & echo $! >> "$2"; ${writeResult(doc)}`;
    const classified = await contractRun({ ...sh(child, pidsFile), ...base, deadlineMs: 5_000 });
    expect(classified.terminal).toEqual({ type: 'captured' });
    expect(classified.exitCode).toBe(0);
    const { pids, dir } = await recorded(pidsFile, 3);
    expect(await allGone(pids)).toBe(true);
    expect(existsSync(dir)).toBe(false);
  });

  it('an aborted run rejects with an AbortError and leaves no process and no directory', async () => {
    const pidsFile = side.file('pids');
    const controller = new AbortController();
    const running = contractRun({
      ...sh(SPAWNS_AND_SLEEPS, pidsFile),
      ...base,
      deadlineMs: 10_000,
      signal: controller.signal,
    });
    const { pids, dir } = await recorded(pidsFile, 5);
    expect(pids.every(isAlive)).toBe(true);
    expect(existsSync(dir)).toBe(true);
    controller.abort(new Error('the caller gave up'));
    const error = await running.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ContractRunAbortedError);
    expect((error as Error).name).toBe('AbortError');
    expect((error as Error).cause).toEqual(new Error('the caller gave up'));
    // The child is reaped before the rejection; its grandchildren were sent SIGKILL with it, and
    // die as soon as the kernel schedules them (a moment, under load).
    expect(isAlive(pids[0]!)).toBe(false);
    expect(await allGone(pids)).toBe(true);
    expect(existsSync(dir)).toBe(false);
  });

  it('an abort during the grace window also rejects, without reading the result', async () => {
    const pidsFile = side.file('pids');
    const controller = new AbortController();
    const doc = result('test-1', 'completed', { output: 'never read' });
    const child = `read request; echo $$ > "$2"; dirname "$1" >> "$2"; read rest; ${writeResult(doc)}; sleep 30`;
    const running = contractRun({
      ...sh(child, pidsFile),
      ...base,
      deadlineMs: 200,
      cancelGraceMs: 5_000,
      signal: controller.signal,
    });
    const { pids, dir } = await recorded(pidsFile, 2);
    setTimeout(() => controller.abort(), 400);
    await expect(running).rejects.toMatchObject({ name: 'AbortError' });
    expect(await allGone(pids)).toBe(true);
    expect(existsSync(dir)).toBe(false);
  });

  it('an already aborted signal spawns nothing', async () => {
    const marker = side.file('spawned');
    const controller = new AbortController();
    controller.abort();
    await expect(
      contractRun({ ...sh(`touch "$2"`, marker), ...base, signal: controller.signal }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(existsSync(marker)).toBe(false);
  });
});

describe('contractRun: the runner process exits mid-launch', () => {
  it('kills the child group and removes the directory on process exit', async () => {
    const pidsFile = side.file('pids');
    const fixture = fileURLToPath(new URL('./fixtures/exit-mid-run.ts', import.meta.url));
    await execFileAsync(process.execPath, [
      '--import',
      'tsx',
      '--conditions=@libos/source',
      fixture,
      pidsFile,
    ]);
    const { pids, dir } = await recorded(pidsFile, 3);
    expect(await allGone(pids)).toBe(true);
    expect(existsSync(dir)).toBe(false);
  });
});

describe('contractRun: stdout is drained, never kept', () => {
  // Measured in a separate process started with --expose-gc, so that only memory the runner
  // keeps counts, not garbage V8 has yet to collect.
  const fixture = fileURLToPath(new URL('./fixtures/drain-memory.ts', import.meta.url));
  const measure = async (mode: 'runner' | 'buffering') => {
    const { stdout } = await execFileAsync(process.execPath, [
      '--expose-gc',
      '--import',
      'tsx',
      '--conditions=@libos/source',
      fixture,
      mode,
      '50',
    ]);
    return JSON.parse(stdout) as { outcome: string; liveGrowthMb: number; rssGrowthMb: number };
  };

  // Each starts a Node process through tsx and pipes 50 MB: seconds on a loaded machine.
  it('drains 50 MB of stdout with flat memory', { timeout: 90_000 }, async () => {
    const drained = await measure('runner');
    expect(drained.outcome).toBe('no_report');
    expect(drained.liveGrowthMb).toBeLessThan(20);
    expect(drained.rssGrowthMb).toBeLessThan(20);
  });

  it('(control) the same measure sees 50 MB kept when stdout is buffered', { timeout: 90_000 }, async () => {
    const buffered = await measure('buffering');
    expect(buffered.outcome).toBe('kept 52428800 bytes');
    expect(buffered.liveGrowthMb).toBeGreaterThan(45);
  });
});
