import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROMPT_PROBLEM, promptOf } from '../src/index.js';
import { FAKE_CLAUDE, runShimWith, scratch } from './helpers.js';

describe('promptOf', () => {
  it('takes a bare string, query with hints, query, or prompt; nothing else', () => {
    expect(promptOf('just ask')).toBe('just ask');
    expect(promptOf({ query: 'q', hints: 'h' })).toBe('q\n\nHints: h');
    expect(promptOf({ query: 'q', hints: '  ' })).toBe('q');
    expect(promptOf({ query: 'q', prompt: 'p' })).toBe('q');
    expect(promptOf({ query: ' ', prompt: 'p' })).toBe('p');
    for (const input of ['  ', null, 3, [], { query: 1 }, { task: 'build it' }, {}]) {
      expect(promptOf(input)).toBeUndefined();
    }
  });
});

describe('serveShim: requests it refuses', () => {
  let dir = '';
  let cleanup = async () => {};
  let resultFile = '';
  beforeEach(async () => {
    ({ dir, cleanup } = await scratch());
    resultFile = join(dir, 'result.json');
  });
  afterEach(() => cleanup());

  const serve = (line: string | undefined, file = resultFile) =>
    runShimWith('claude', ['--result-file', file, '--command', FAKE_CLAUDE], {
      resultFile: file,
      ...(line === undefined ? {} : { line }),
      closeStdin: line === undefined ? 'now' : undefined,
    });

  it('stdin closed before a request: no result, a stderr line, a nonzero exit', async () => {
    const { code, stderr, result } = await serve(undefined);
    expect(code).toBe(1);
    expect(stderr).toBe('claude shim: stdin closed before a request arrived\n');
    expect(result).toBeUndefined();
  });

  it('a malformed request without an id: no result', async () => {
    for (const [line, problem] of [
      ['not json\n', 'the request is not JSON'],
      ['[1]\n', 'the request is not a JSON object'],
      ['{"version":1,"kind":"k","input":"q"}\n', 'the request has no `request_id` string'],
      ['{"workflow_contract":1,"id":"cr-1","input":{}}\n', 'the request has no `version`'],
    ] as const) {
      const { code, stderr, result } = await serve(line);
      expect(code).toBe(1);
      expect(stderr).toBe(`claude shim: malformed request: ${problem}\n`);
      expect(result).toBeUndefined();
    }
  });

  it('a malformed request with an id: a failed result for that id, exit 0', async () => {
    const base = { version: 1, request_id: 'r-9', kind: 'explore', input: { query: 'q' } };
    for (const [fields, problem] of [
      [{ version: 2 }, 'unsupported request version 2'],
      [{ kind: 7 }, 'the request has no `kind` string'],
      [{ input: undefined }, 'the request has no `input`'],
      [{ limits: { max_steps: 0 } }, '`limits.max_steps` must be an integer of at least 1'],
      [{ limits: { max_steps: 5.5 } }, '`limits.max_steps` must be an integer of at least 1'],
      [{ limits: 'many' }, '`limits` must be a JSON object'],
      [{ schema: 'object' }, '`schema` must be a JSON object'],
      [{ input: { task: 'edit it' } }, PROMPT_PROBLEM],
      [{ input: { query: '   ' } }, PROMPT_PROBLEM],
    ] as const) {
      const { code, stderr, result } = await serve(`${JSON.stringify({ ...base, ...fields })}\n`);
      expect(code).toBe(0);
      expect(result).toEqual({
        version: 1,
        request_id: 'r-9',
        status: 'failed',
        reason: `malformed request: ${problem}`,
      });
      expect(stderr).toBe(`claude shim: malformed request: ${problem}\n`);
    }
  });

  it('a result that cannot be written: a stderr line and a nonzero exit', async () => {
    const file = join(dir, 'missing-dir', 'result.json');
    const { code, stderr } = await serve('{"version":2,"request_id":"r"}\n', file);
    expect(code).toBe(1);
    expect(stderr).toMatch(new RegExp(`^claude shim: cannot write the result to ${file}: .*ENOENT`));
  });

  it('an option error: help on stderr, exit 2, stdin never read', async () => {
    const { code, stderr, result } = await runShimWith(
      'codex',
      ['--result-file', resultFile, '--writeable'],
      {
        resultFile,
        line: '{"version":1,"request_id":"r","kind":"k","input":"q"}\n',
      },
    );
    expect(code).toBe(2);
    expect(stderr).toContain("codex shim: unexpected argument '--writeable' (did you mean '--writable'?)");
    expect(stderr).toContain('--writable          write-capable run');
    expect(result).toBeUndefined();
  });
});
