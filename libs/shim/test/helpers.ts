import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { DIALECTS, type DialectName, serveShim } from '../src/index.js';

export const FAKE_CLAUDE = fileURLToPath(new URL('./fixtures/fake-claude.mjs', import.meta.url));
export const FAKE_CODEX = fileURLToPath(new URL('./fixtures/fake-codex.mjs', import.meta.url));

export function requestLine(fields: Record<string, unknown> = {}): string {
  return `${JSON.stringify({ version: 1, request_id: 'req-1', kind: 'explore', input: { query: 'hi' }, ...fields })}\n`;
}

/** A scratch directory per test, removed afterwards by `cleanup`. */
export async function scratch(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'libos-shim-test-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export class TextSink extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

export interface ShimRun {
  code: number;
  stderr: string;
  stdout: string;
  /** The parsed result document, or undefined when none was written. */
  result: Record<string, unknown> | undefined;
}

/**
 * Runs a shim in this process against a real (fake) CLI child: stdin is a pipe the test holds,
 * so it can send the request line and later close stdin (the parent's cancel).
 */
export async function runShimWith(
  dialect: DialectName,
  argv: string[],
  options: { line?: string; closeStdin?: 'now' | Promise<unknown>; resultFile: string },
): Promise<ShimRun> {
  const stdin = new PassThrough();
  const stdout = new TextSink();
  const stderr = new TextSink();
  const running = serveShim(DIALECTS[dialect], argv, { stdin, stdout, stderr });
  if (options.line !== undefined) stdin.write(options.line);
  if (options.closeStdin === 'now') stdin.end();
  else if (options.closeStdin !== undefined) void options.closeStdin.then(() => stdin.end());
  const code = await running;
  stdin.destroy();
  const result = existsSync(options.resultFile)
    ? (JSON.parse(await readFile(options.resultFile, 'utf8')) as Record<string, unknown>)
    : undefined;
  return { code, stderr: stderr.text, stdout: stdout.text, result };
}

/** Resolves once `path` exists (a fake CLI announcing it is mid-run). */
export async function fileAppears(path: string, timeoutMs = 10_000): Promise<void> {
  const started = Date.now();
  while (!existsSync(path)) {
    if (Date.now() - started > timeoutMs) throw new Error(`${path} did not appear`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function readJson(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
}
