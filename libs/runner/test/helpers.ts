import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RESULT_FILE_PLACEHOLDER } from '@libos/contract';

/** `sh -c SCRIPT sh {result_file} ...extra`: the result path arrives as `$1`, extras as `$2…`. */
export function sh(script: string, ...extra: string[]) {
  return { command: 'sh', args: ['-c', script, 'sh', RESULT_FILE_PLACEHOLDER, ...extra] };
}

export const USAGE = {
  prompt_tokens: 7,
  completion_tokens: 3,
  total_tokens: 10,
  prompt_cache_hit_tokens: 0,
  prompt_cache_miss_tokens: 7,
};

/** A shell command that writes `doc` (JSON) to the result path `$1`, atomically. */
export function writeResult(doc: object | string): string {
  const text = typeof doc === 'string' ? doc : JSON.stringify(doc);
  return `printf '%s' '${text.replaceAll("'", "'\\''")}' > "$1.tmp" && mv "$1.tmp" "$1"`;
}

export function result(id: string, status: string, fields: object = {}) {
  return { version: 1, request_id: id, status, ...fields };
}

/** Alive and not a zombie (PID 1 here may not reap orphans, so a zombie counts as gone). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Polls until every pid is gone or `ms` pass (SIGKILL delivery is quick but not instant). */
export async function allGone(pids: number[], ms = 5_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (pids.every((pid) => !isAlive(pid))) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return pids.every((pid) => !isAlive(pid));
}

/** A scratch directory for side files children write (pids, argv), outside the result dir. */
export async function scratch(): Promise<{
  dir: string;
  file: (name: string) => string;
  cleanup(): Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), 'runner-test-'));
  return { dir, file: (name) => join(dir, name), cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export async function readLines(path: string): Promise<string[]> {
  return (await readFile(path, 'utf8')).split('\n').filter((line) => line !== '');
}

export async function elapsed<T>(run: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const value = await run();
  return [value, performance.now() - start];
}

/** Runs `body` with os.tmpdir() pointing at `dir` (each test file has its own process). */
export async function withTmpdir<T>(dir: string, body: () => Promise<T>): Promise<T> {
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  try {
    return await body();
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}
