import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type ChildEnding,
  type ChildHandler,
  encodeRequestLine,
  parseChildArgv,
  type RunChildOptions,
  runChild,
} from '../src/index.js';

let dir: string;
let resultFile: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'contract-serve-'));
  resultFile = join(dir, 'result.json');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const REQUEST = encodeRequestLine({ request_id: 'r-1', kind: 'echo', input: { query: 'q' } });

function harness(handler: ChildHandler, argv: string[] = [resultFile]) {
  const stdin = new PassThrough();
  let stderr = '';
  const options: RunChildOptions = {
    argv,
    stdin,
    stderr: { write: (t: string) => (stderr += t) },
    name: 'test child',
  };
  const exit = runChild(handler, options);
  return { stdin, exit, stderr: () => stderr };
}

const readResult = async () => JSON.parse(await readFile(resultFile, 'utf8'));
const echo: ChildHandler = async (request) => ({ status: 'completed', output: request.input });

describe('runChild', () => {
  it('answers one request without waiting for stdin EOF', async () => {
    const child = harness(echo);
    child.stdin.write(REQUEST); // stdin stays open
    expect(await child.exit).toBe(0);
    expect(await readFile(resultFile, 'utf8')).toBe(
      '{"version":1,"request_id":"r-1","status":"completed","output":{"query":"q"}}\n',
    );
    expect(await readdir(dir)).toEqual(['result.json']);
    expect(child.stderr()).toBe('');
  });

  it('reads a request split across chunks, and only the first line', async () => {
    let seen: unknown;
    const child = harness(async (request) => {
      seen = request;
      return { status: 'no_report' };
    });
    child.stdin.write(REQUEST.slice(0, 10));
    child.stdin.write(`${REQUEST.slice(10)}{"version":1,"request_id":"second"`);
    expect(await child.exit).toBe(0);
    expect(seen).toEqual({ version: 1, request_id: 'r-1', kind: 'echo', input: { query: 'q' } });
    expect(await readResult()).toEqual({ version: 1, request_id: 'r-1', status: 'no_report' });
  });

  it('turns stdin EOF into an abort the handler sees (the cancel path)', async () => {
    let abortedAtStart: boolean | undefined;
    const child = harness(async (_request, { signal }) => {
      abortedAtStart = signal.aborted;
      await once(signal, 'abort');
      return {
        status: 'interrupted',
        reason: 'the parent closed stdin',
        usage: {
          prompt_tokens: 5,
          completion_tokens: 1,
          total_tokens: 6,
          prompt_cache_hit_tokens: 0,
          prompt_cache_miss_tokens: 5,
        },
        steps: 1,
      };
    });
    child.stdin.write(REQUEST);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(existsSync(resultFile)).toBe(false);
    child.stdin.end();
    expect(await child.exit).toBe(0);
    expect(abortedAtStart).toBe(false);
    expect((await readResult()).status).toBe('interrupted');
    expect((await readResult()).usage.prompt_tokens).toBe(5);
    expect(child.stderr()).toBe(''); // only `failed` endings are echoed on stderr
  });

  it('takes a last request line without a newline at EOF, already cancelled', async () => {
    let aborted: boolean | undefined;
    const child = harness(async (_r, { signal }) => {
      aborted = signal.aborted;
      return { status: 'interrupted', reason: 'cancelled' };
    });
    child.stdin.end(REQUEST.trimEnd());
    expect(await child.exit).toBe(0);
    expect(aborted).toBe(true);
  });

  it('refuses a closed stdin: stderr, nonzero exit, no file', async () => {
    const child = harness(echo);
    child.stdin.end();
    expect(await child.exit).toBe(1);
    expect(child.stderr()).toBe('test child: stdin closed before a request arrived\n');
    expect(existsSync(resultFile)).toBe(false);
  });

  it('refuses a malformed request without an id: stderr, nonzero exit, no file', async () => {
    const child = harness(echo);
    child.stdin.write('{"workflow_contract":1}\n');
    expect(await child.exit).toBe(1);
    expect(child.stderr()).toBe('test child: malformed request: the request has no `version`\n');
    expect(existsSync(resultFile)).toBe(false);
  });

  it('answers a malformed request with an id with a failed result', async () => {
    const child = harness(echo);
    child.stdin.write('{"version":2,"request_id":"r-2","kind":"k","input":1}\n');
    expect(await child.exit).toBe(0);
    expect(await readResult()).toEqual({
      version: 1,
      request_id: 'r-2',
      status: 'failed',
      reason: 'malformed request: unsupported request version 2',
    });
    expect(child.stderr()).toBe('test child: malformed request: unsupported request version 2\n');
  });

  it('turns a handler throw into failed with a reason', async () => {
    const child = harness(async () => {
      throw new Error('no model key');
    });
    child.stdin.write(REQUEST);
    expect(await child.exit).toBe(0);
    expect(await readResult()).toEqual({
      version: 1,
      request_id: 'r-1',
      status: 'failed',
      reason: 'test child failed: no model key',
    });
    expect(child.stderr()).toBe('test child: test child failed: no model key\n');
  });

  it('refuses to write an ending the runner would find malformed', async () => {
    const child = harness(async () => ({ status: 'completed', output: 1, steps: 1.5 }) as ChildEnding);
    child.stdin.write(REQUEST);
    expect(await child.exit).toBe(0);
    const doc = await readResult();
    expect(doc.status).toBe('failed');
    expect(doc.reason).toMatch(/^test child failed: an invalid ending: /);
  });

  it('reports a result it cannot write: stderr and nonzero exit', async () => {
    const missing = join(dir, 'gone', 'result.json');
    const child = harness(echo, [missing]);
    child.stdin.write(REQUEST);
    expect(await child.exit).toBe(1);
    expect(child.stderr()).toMatch(
      new RegExp(`^test child: cannot write the result to ${missing}: .*ENOENT`),
    );
  });

  it('refuses arguments that name no result path', async () => {
    const child = harness(echo, []);
    expect(await child.exit).toBe(2);
    expect(child.stderr()).toBe(
      'test child: pass the result path as --result-file PATH or as the sole argument\n',
    );
  });
});

describe('parseChildArgv', () => {
  it('takes --result-file PATH, --result-file=PATH or the sole positional argument', () => {
    expect(parseChildArgv(['--result-file', '/r.json', '--kind', 'x'])).toEqual({
      ok: true,
      resultFile: '/r.json',
      rest: ['--kind', 'x'],
    });
    expect(parseChildArgv(['--verbose', '--result-file=/r.json'])).toEqual({
      ok: true,
      resultFile: '/r.json',
      rest: ['--verbose'],
    });
    expect(parseChildArgv(['--verbose', '/r.json'])).toEqual({
      ok: true,
      resultFile: '/r.json',
      rest: ['--verbose'],
    });
  });

  it('refuses a blank flag value, a flag without a value, and ambiguous positionals', () => {
    expect(parseChildArgv(['--result-file'])).toEqual({ ok: false, problem: '--result-file needs a path' });
    expect(parseChildArgv(['--result-file= '])).toEqual({ ok: false, problem: '--result-file needs a path' });
    expect(parseChildArgv(['a', 'b']).ok).toBe(false);
  });
});

describe('serveChild in a real process', () => {
  const fixture = fileURLToPath(new URL('./fixtures/serve-child.ts', import.meta.url));
  const start = (args: string[]) =>
    spawn(process.execPath, ['--import', 'tsx', '--conditions=@libos/source', fixture, ...args], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });

  it('exits 0 after writing its result while stdin is still open', async () => {
    const child = start(['--result-file', resultFile]);
    child.stdin.write(encodeRequestLine({ request_id: 'p-1', kind: 'k', input: 'hi' }));
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    expect(await readResult()).toEqual({
      version: 1,
      request_id: 'p-1',
      status: 'completed',
      output: 'hi',
      steps: 0,
    });
    child.stdin.destroy();
  });

  it('writes interrupted when the parent closes stdin, and exits 0', async () => {
    const child = start([`--result-file=${resultFile}`]);
    child.stdin.write(encodeRequestLine({ request_id: 'p-2', kind: 'k', input: 'wait' }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    child.stdin.end();
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    expect(await readResult()).toEqual({
      version: 1,
      request_id: 'p-2',
      status: 'interrupted',
      reason: 'the parent closed stdin',
    });
  });

  it('exits nonzero with a message and no file when stdin closes first', async () => {
    const child = start([resultFile]);
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.stdin.end();
    const [code] = await once(child, 'exit');
    expect(code).not.toBe(0);
    expect(stderr).toContain('fixture child: stdin closed before a request arrived');
    expect(existsSync(resultFile)).toBe(false);
  });
});
