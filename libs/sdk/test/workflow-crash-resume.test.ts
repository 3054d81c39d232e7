import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJournalEntries } from '../src/index.js';
import { runFanOut } from './workflow-fixtures/fan-out.js';

const ITEMS = 6;
const ALL = Array.from({ length: ITEMS }, (_, i) => `item-${i}`);
const MAIN = fileURLToPath(new URL('./workflow-fixtures/fan-out-main.ts', import.meta.url));
const PACKAGE = fileURLToPath(new URL('..', import.meta.url));

interface Launch {
  item: string;
  pid: number;
}

async function launches(path: string): Promise<Launch[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [item = '', pid = ''] = line.split(' ');
      return { item, pid: Number(pid) };
    });
}

async function journaledItems(path: string): Promise<string[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return readJournalEntries(text).map((e) => (e.call.input as { query: string }).query);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

describe('crash-resume of a fan-out over contractRunner and fileJournal', () => {
  let dir: string;
  let journalPath: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sdk-resume-'));
    journalPath = join(dir, 'run.jsonl');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true, maxRetries: 5 });
  });

  /** Midway: some outcomes journaled, and more work launched than journaled (work in flight). */
  async function midway(log: string): Promise<boolean> {
    const journaled = (await journaledItems(journalPath)).length;
    return journaled >= 2 && (await launches(log)).length > journaled;
  }

  /** Resume against the same journal; only the items the journal lacks may launch. */
  async function resumeAndCheck(journaled: string[]) {
    const log = join(dir, 'resume.log');
    const summary = await runFanOut({
      journalPath,
      launchLog: log,
      items: ITEMS,
      maxConcurrent: 3,
      childSeconds: 0,
    });
    expect(summary.answers).toEqual(ALL.map((item) => ({ answer: item })));
    const relaunched = (await launches(log)).map((l) => l.item).sort();
    expect(relaunched).toEqual(ALL.filter((item) => !journaled.includes(item)).sort());
    expect(summary.callsMade).toBe(ITEMS - journaled.length);
    expect(summary.callsReplayed).toBe(journaled.length);
    // Every item is now journaled exactly once: the resume appended only new work.
    expect((await journaledItems(journalPath)).sort()).toEqual([...ALL].sort());
  }

  it('resumes after the caller aborts midway', async () => {
    const controller = new AbortController();
    const log = join(dir, 'first.log');
    const first = runFanOut({
      journalPath,
      launchLog: log,
      items: ITEMS,
      maxConcurrent: 2,
      childSeconds: 0.3,
      signal: controller.signal,
    });
    first.catch(() => {}); // awaited below, after the abort
    await until(() => midway(log), 'work in flight after two journaled outcomes');
    controller.abort();
    await expect(first).rejects.toMatchObject({ name: 'AbortError' });
    const journaled = await journaledItems(journalPath);
    expect(journaled.length).toBeGreaterThanOrEqual(2);
    expect(journaled.length).toBeLessThan(ITEMS);
    const firstLaunches = await launches(log);
    expect(firstLaunches.length).toBeGreaterThan(journaled.length); // work was in flight when aborted
    expect(firstLaunches.filter((l) => alive(l.pid))).toEqual([]); // and its children were torn down
    await resumeAndCheck(journaled);
  });

  it('resumes after the driving process is killed with SIGKILL midway', async () => {
    const log = join(dir, 'first.log');
    const childTmp = join(dir, 'tmp'); // the killed runner cannot remove its result dirs: keep them here
    await mkdir(childTmp);
    const driver = spawn(
      process.execPath,
      ['--import', 'tsx', '--conditions=@libos/source', MAIN, journalPath, log, String(ITEMS), '2', '0.3'],
      { cwd: PACKAGE, env: { ...process.env, TMPDIR: childTmp }, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    try {
      await until(() => midway(log), 'work in flight after two journaled outcomes');
      driver.kill('SIGKILL');
      await exited(driver);
    } finally {
      driver.kill('SIGKILL');
    }
    expect(driver.signalCode).toBe('SIGKILL');
    // The orphaned children of the killed driver are not part of any resume: let any child that
    // was just spawned log itself, then stop them all (each leads its own process group).
    await new Promise((r) => setTimeout(r, 150));
    const firstLaunches = await launches(log);
    for (const { pid } of firstLaunches) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    const journaled = await journaledItems(journalPath);
    expect(journaled.length).toBeGreaterThanOrEqual(2);
    expect(journaled.length).toBeLessThan(ITEMS);
    expect(firstLaunches.length).toBeGreaterThan(journaled.length);
    expect(await readdir(childTmp)).not.toEqual([]); // evidence the driver died mid-launch
    await resumeAndCheck(journaled);
  }, 40_000);
});
