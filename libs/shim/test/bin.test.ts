import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_CLAUDE, FAKE_CODEX, fileAppears, readJson, requestLine, scratch } from './helpers.js';

const BIN = fileURLToPath(new URL('../src/bin.ts', import.meta.url));

interface BinRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The shim as the runner launches it: a real process whose stdin stays open after the request
 * (closed only when `closeStdin` resolves, as a runner's deadline would).
 */
function runBin(args: string[], line?: string, closeStdin?: Promise<unknown>): Promise<BinRun> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=@libos/source', BIN, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdin.on('error', () => {});
  if (line !== undefined) child.stdin.write(line);
  void closeStdin?.then(() => child.stdin.end());
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('bin.ts', () => {
  let dir = '';
  let cleanup = async () => {};
  beforeEach(async () => {
    ({ dir, cleanup } = await scratch());
  });
  afterEach(() => cleanup());

  it('claude: writes the result and exits 0 while its stdin is still open', async () => {
    const resultFile = join(dir, 'result.json');
    const run = await runBin(
      ['claude', '--result-file', resultFile, '--command', FAKE_CLAUDE],
      requestLine(),
    );
    expect(run.code).toBe(0);
    expect(await readJson(resultFile)).toMatchObject({ request_id: 'req-1', status: 'completed', steps: 1 });
  });

  it('codex: stdin EOF is the cancel, the result is interrupted', async () => {
    const resultFile = join(dir, 'result.json');
    const ready = join(dir, 'ready');
    const run = await runBin(
      [
        'codex',
        '--result-file',
        resultFile,
        '--command',
        FAKE_CODEX,
        '--',
        '--scenario',
        'hang',
        '--ready',
        ready,
      ],
      requestLine({ request_id: 'cr-7' }),
      fileAppears(ready),
    );
    expect(run.code).toBe(0);
    expect(await readJson(resultFile)).toEqual({
      version: 1,
      request_id: 'cr-7',
      status: 'interrupted',
      reason: 'the parent closed stdin',
      steps: 1,
    });
  });

  it('prints help with exit 0, refuses an unknown dialect or option with a nonzero exit', async () => {
    const help = await runBin(['claude', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: libos shim claude --result-file PATH');
    const dialect = await runBin(['gemini', '--result-file', 'x']);
    expect(dialect.code).toBe(2);
    expect(dialect.stderr).toContain("libos shim: unknown dialect 'gemini'");
    const option = await runBin(['claude', '--writeable']);
    expect(option.code).toBe(2);
    expect(option.stderr).toContain("unexpected argument '--writeable'");
  });
});
