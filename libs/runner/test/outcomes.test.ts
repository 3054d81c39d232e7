import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { contractRun } from '../src/index.js';
import { readLines, result, scratch, sh, USAGE, withTmpdir, writeResult } from './helpers.js';

let side: Awaited<ReturnType<typeof scratch>>;
beforeEach(async () => {
  side = await scratch();
});
afterEach(async () => {
  await side.cleanup();
});

const run = (
  launch: { command: string; args: string[] },
  more: Partial<Parameters<typeof contractRun>[0]> = {},
) =>
  contractRun({ ...launch, input: { query: 'q' }, kind: 'probe', id: 'test-1', deadlineMs: 5_000, ...more });

describe('contractRun: the examples of the contract specification', () => {
  it('a shell child returns an accounted report', async () => {
    const child = [
      'read request',
      `id=$(printf '%s' "$request" | sed 's/.*"request_id":"\\([^"]*\\)".*/\\1/')`,
      `printf '{"version":1,"request_id":"%s","status":"completed","output":{"answer":"ready"},"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":7},"steps":1}' "$id" > "$1"`,
    ].join('\n');
    expect(await run(sh(child), { id: 'cr-1', input: { query: 'Are you ready?' }, kind: 'echo' })).toEqual({
      terminal: { type: 'captured' },
      report: { answer: 'ready' },
      stepsUsed: 1,
      promptTokens: 7,
      completionTokens: 3,
      usage: USAGE,
      exitCode: 0,
    });
  });

  it('inspects a no-report outcome directly', async () => {
    const child = `read request; printf '{"version":1,"request_id":"probe-1","status":"no_report"}' > "$1"`;
    expect(await run(sh(child), { id: 'probe-1', input: { query: 'probe' }, kind: 'echo' })).toEqual({
      terminal: { type: 'no_report' },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: "the child's result carries no usage",
      exitCode: 0,
    });
  });
});

describe('contractRun: the request and the argv', () => {
  it('sends exactly one request line, in the reference key order', async () => {
    const seen = side.file('request');
    const child = `read request; printf '%s' "$request" > "$2"; ${writeResult(result('test-1', 'no_report'))}`;
    await run(sh(child, seen), { maxSteps: 7 });
    expect(await readFile(seen, 'utf8')).toBe(
      '{"version":1,"request_id":"test-1","kind":"probe","input":{"query":"q"},"limits":{"max_steps":7}}',
    );
    await run(sh(child, seen), { id: 'test-1', input: null, schema: { type: 'object' } });
    expect(await readFile(seen, 'utf8')).toBe(
      '{"version":1,"request_id":"test-1","kind":"probe","input":null,"schema":{"type":"object"}}',
    );
  });

  it('replaces every occurrence of the placeholder in every argument, without a shell', async () => {
    const seen = side.file('argv');
    const child = `read request; printf '%s\\n' "$2" "$3" "$4" > "${seen}"; ${writeResult(result('test-1', 'no_report'))}`;
    const classified = await contractRun({
      command: 'sh',
      args: [
        '-c',
        child,
        'sh',
        '{result_file}',
        '--result-file={result_file}',
        'a{result_file}b{result_file}',
        '$HOME;*',
      ],
      input: 1,
      kind: 'k',
      id: 'test-1',
    });
    expect(classified.terminal).toEqual({ type: 'no_report' });
    const [flag, twice, literal] = await readLines(seen);
    const path = flag?.slice('--result-file='.length) ?? '';
    expect(path).toMatch(/\/workflow-result-[^/]+\/result\.json$/);
    expect(twice).toBe(`a${path}b${path}`);
    expect(literal).toBe('$HOME;*');
  });

  it('gives the child a private 0700 directory, removed afterwards', async () => {
    const seen = side.file('dir');
    const child = `read request; d=$(dirname "$1"); stat -c %a "$d" > "$2"; printf '%s' "$d" >> "$2"; ${writeResult(result('test-1', 'no_report'))}`;
    await run(sh(child, seen));
    const [mode, dir] = await readLines(seen);
    expect(mode).toBe('700');
    expect(dir).toMatch(/workflow-result-/);
    expect(existsSync(dir ?? '')).toBe(false);
  });

  it('removes the directory with whatever else the child left in it (off the event loop)', async () => {
    const seen = side.file('dir');
    const child = `read request; d=$(dirname "$1"); mkdir "$d/sub"; for i in 1 2 3; do : > "$d/sub/f$i"; done; printf '%s' "$d" > "$2"; ${writeResult(result('test-1', 'no_report'))}`;
    await run(sh(child, seen));
    const [dir] = await readLines(seen);
    expect(dir).toMatch(/workflow-result-/);
    await vi.waitFor(() => expect(existsSync(dir ?? '')).toBe(false), { timeout: 5_000, interval: 10 });
  });

  it('refuses an argv without {result_file}: nothing created, nothing spawned', async () => {
    const marker = side.file('spawned');
    const tmp = side.file('tmp');
    await mkdir(tmp);
    const classified = await withTmpdir(tmp, () =>
      contractRun({ command: 'sh', args: ['-c', `touch ${marker}`], input: 1, kind: 'k', id: 'x' }),
    );
    expect(classified).toEqual({
      terminal: {
        type: 'failed',
        reason: 'the argv must name {result_file}, where the child writes its result',
      },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(existsSync(marker)).toBe(false);
    expect(await readdir(tmp)).toEqual([]);
  });

  it('fails as a launch failure when the private directory cannot be made', async () => {
    const classified = await withTmpdir(side.file('no-such-dir'), () => run(sh('exit 0')));
    expect(classified.terminal.type).toBe('failed');
    expect(classified.terminal.reason).toMatch(/^no directory for the result file: .*ENOENT/);
    expect(classified.unaccounted).toBeUndefined();
    expect(classified.exitCode).toBeUndefined();
  });

  it('passes cwd and extraEnv over the inherited environment', async () => {
    const child = `read request; printf '{"version":1,"request_id":"test-1","status":"completed","output":["%s","%s","%s"]}' "$PWD" "$LIBOS_TEST_VAR" "\${PATH:+inherited}" > "$1"`;
    const classified = await run(sh(child), { cwd: side.dir, extraEnv: { LIBOS_TEST_VAR: 'overlaid' } });
    expect(classified.report).toEqual([side.dir, 'overlaid', 'inherited']);
  });

  it('starts from a given env instead of the runner’s own, extraEnv over it', async () => {
    const child = `read request; printf '{"version":1,"request_id":"test-1","status":"completed","output":["%s","%s","%s"]}' "\${HOME:-unset}" "$ONLY" "$OVER" > "$1"`;
    const classified = await run(sh(child), {
      env: { PATH: process.env.PATH, ONLY: 'given', OVER: 'given', DROPPED: undefined },
      extraEnv: { OVER: 'overlaid' },
    });
    expect(classified.report).toEqual(['unset', 'given', 'overlaid']);
  });

  it('a missing executable is a spawn failure with nothing unaccounted', async () => {
    expect(await run({ command: 'libos-no-such-command', args: ['{result_file}'] })).toEqual({
      terminal: { type: 'failed', reason: 'child spawn failed: spawn libos-no-such-command ENOENT' },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
    });
  });

  it('rejects invalid options as a programming error', async () => {
    await expect(run(sh('exit 0'), { deadlineMs: 0 })).rejects.toThrow(TypeError);
    await expect(run(sh('exit 0'), { maxSteps: 0 })).rejects.toThrow(/invalid options/);
  });
});

describe('contractRun: the result file decides', () => {
  it('a child that exits 0 without a file', async () => {
    expect(await run(sh('read request; exit 0'))).toEqual({
      terminal: { type: 'failed', reason: 'the child exited 0 without writing a result' },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: 'the child left no result',
      exitCode: 0,
    });
  });

  it('a child that exits 3 without a file', async () => {
    const classified = await run(sh('read request; exit 3'));
    expect(classified.terminal.reason).toContain('exited 3');
    expect(classified.exitCode).toBe(3);
  });

  it('malformed JSON', async () => {
    const classified = await run(sh(`read request; ${writeResult('{"version":1,')}`));
    expect(classified.terminal.reason).toMatch(/^malformed result file: not JSON: /);
    expect(classified.unaccounted).toBe('the result file is malformed');
  });

  it.each([
    [
      result('test-9', 'completed', { output: 1 }),
      'malformed result file: answers request test-9, not test-1',
    ],
    [result('test-1', 'finished', { output: 1 }), 'malformed result file: unknown status finished'],
    [
      result('test-1', 'completed', { output: 1, usage: { ...USAGE, prompt_tokens: 1.5 } }),
      'malformed result file: malformed usage',
    ],
    [
      result('test-1', 'completed', { output: 1, usage: { ...USAGE, cost_usd: '0.25' } }),
      'malformed result file: malformed usage',
    ],
    [
      result('test-1', 'completed', { output: 1, usage: { ...USAGE, cost_usd: -1 } }),
      'malformed result file: malformed usage',
    ],
  ])('%j → %s', async (doc, reason) => {
    const classified = await run(sh(`read request; ${writeResult(doc)}`));
    expect(classified).toEqual({
      terminal: { type: 'failed', reason },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: 'the result file is malformed',
      exitCode: 0,
    });
  });

  it('an infinite cost (1e999) is malformed usage, with no cost', async () => {
    const doc = JSON.stringify(result('test-1', 'completed', { output: 1, usage: USAGE })).replace(
      '"prompt_cache_miss_tokens":7',
      '"prompt_cache_miss_tokens":7,"cost_usd":1e999',
    );
    const classified = await run(sh(`read request; ${writeResult(doc)}`));
    expect(classified.terminal.reason).toBe('malformed result file: malformed usage');
    expect(classified.costUsd).toBeUndefined();
    expect(classified.promptTokens).toBe(0);
  });

  it('an unreadable result (a directory at the path)', async () => {
    const classified = await run(sh('read request; mkdir "$1"'));
    expect(classified.terminal.reason).toBe('the result file is unreadable: it is not a regular file');
    expect(classified.unaccounted).toBe('the result file is unreadable');
  });

  it('a result the child cannot use to make its reader read elsewhere: a symlink, a FIFO, a hard link', async () => {
    // The reader may be more privileged than the child: none of these is followed or read.
    const symlink = await run(sh('read request; ln -s /etc/hostname "$1"'));
    expect(symlink.terminal.reason).toBe('the result file is unreadable: it is a symbolic link');
    const fifo = await run(sh('read request; mkfifo "$1"'));
    expect(fifo.terminal.reason).toBe('the result file is unreadable: it is not a regular file');
    const linked = await run(
      sh(`read request; ${writeResult(result('test-1', 'completed', { output: 'x' }))}; ln "$1" "$1.2"`),
    );
    expect(linked.terminal.reason).toBe('the result file is unreadable: it has other hard links');
  });

  it('a result over the size limit is refused unread, however large (a sparse 1 GiB file)', async () => {
    const before = process.memoryUsage().rss;
    const huge = await run(sh('read request; truncate -s 1G "$1"'));
    expect(huge.terminal.reason).toBe(
      `the result file is unreadable: it is ${1024 ** 3} bytes, over the limit of ${16 * 1024 * 1024} bytes`,
    );
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
    const doc = JSON.stringify({
      version: 1,
      request_id: 'test-1',
      status: 'completed',
      output: 'y'.repeat(2048),
    });
    const small = await run(sh(`read request; printf '%s' '${doc}' > "$1"`), { maxResultBytes: 1024 });
    expect(small.terminal.reason).toBe(
      `the result file is unreadable: it is ${doc.length} bytes, over the limit of 1024 bytes`,
    );
    const fits = await run(sh(`read request; printf '%s' '${doc}' > "$1"`), { maxResultBytes: doc.length });
    expect(fits.terminal).toEqual({ type: 'captured' });
  });

  it('completed with output null is captured with a null report', async () => {
    const classified = await run(
      sh(`read request; ${writeResult(result('test-1', 'completed', { output: null, usage: USAGE }))}`),
    );
    expect(classified.terminal).toEqual({ type: 'captured' });
    expect(Object.hasOwn(classified, 'report')).toBe(true);
    expect(classified.report).toBeNull();
  });

  it('completed with a nonzero exit is captured, keeping the exit code', async () => {
    const doc = result('test-1', 'completed', { output: 'ok', usage: { ...USAGE, cost_usd: 0.5 }, steps: 2 });
    expect(await run(sh(`read request; ${writeResult(doc)}; exit 5`))).toEqual({
      terminal: { type: 'captured' },
      report: 'ok',
      stepsUsed: 2,
      promptTokens: 7,
      completionTokens: 3,
      costUsd: 0.5,
      usage: { ...USAGE, cost_usd: 0.5 },
      exitCode: 5,
    });
  });

  it.each([
    ['max_steps_exhausted', {}, { type: 'max_steps' }],
    ['context_yield', { reason: 'ceiling' }, { type: 'context_yield' }],
    ['aborted', { reason: 'user' }, { type: 'failed', reason: 'aborted: user' }],
    ['interrupted', { reason: 'stop' }, { type: 'failed', reason: 'interrupted: stop' }],
    ['failed', { reason: 'no key' }, { type: 'failed', reason: 'no key' }],
  ])('status %s maps to its terminal, with usage', async (status, fields, terminal) => {
    const doc = result('test-1', status, { ...fields, usage: USAGE, steps: 3 });
    const classified = await run(sh(`read request; ${writeResult(doc)}`));
    expect(classified.terminal).toEqual(terminal);
    expect([classified.promptTokens, classified.completionTokens, classified.stepsUsed]).toEqual([7, 3, 3]);
    expect(classified.unaccounted).toBeUndefined();
  });

  it('ignores forged results, usage and non-UTF-8 bytes on stdout', async () => {
    const forged = JSON.stringify(result('test-1', 'completed', { output: 'forged', usage: USAGE }));
    const child = `read request; printf '%s\\n\\377\\376\\n{"usage":{"prompt_tokens":99}}\\n' '${forged}'; ${writeResult(result('test-1', 'no_report'))}`;
    const classified = await run(sh(child));
    expect(classified.terminal).toEqual({ type: 'no_report' });
    expect(classified.promptTokens).toBe(0);
  });

  it('hands stderr bytes to a callback, unparsed', async () => {
    const chunks: Uint8Array[] = [];
    const forged = JSON.stringify(result('test-1', 'completed', { output: 'forged' }));
    const child = `read request; printf '%s' '${forged}' >&2; ${writeResult(result('test-1', 'no_report'))}`;
    const classified = await run(sh(child), { stderr: (chunk) => chunks.push(chunk) });
    expect(classified.terminal).toEqual({ type: 'no_report' });
    expect(Buffer.concat(chunks).toString()).toBe(forged);
  });

  it('hands a copy of stdout to a tap without changing the classification, even if the tap throws', async () => {
    const forged = JSON.stringify(result('test-1', 'completed', { output: 'forged', usage: USAGE }));
    const child = `read request; printf '%s\\n' '${forged}'; head -c 300000 /dev/zero; ${writeResult(result('test-1', 'no_report'))}`;
    const chunks: Uint8Array[] = [];
    const tapped = await run(sh(child), { stdout: (chunk) => chunks.push(Buffer.from(chunk)) });
    expect(tapped.terminal).toEqual({ type: 'no_report' });
    expect(tapped.promptTokens).toBe(0);
    const seen = Buffer.concat(chunks);
    expect(seen.length).toBe(forged.length + 1 + 300_000);
    expect(seen.subarray(0, forged.length).toString()).toBe(forged);
    const throwing = await run(sh(child), {
      stdout: () => {
        throw new Error('a broken tap');
      },
    });
    expect(throwing).toEqual(await run(sh(child)));
  });
});

describe('contractRun: the exit-status wait', () => {
  it('a child that closes stdout but lingers past 2 s is killed, its exit status lost', async () => {
    const start = performance.now();
    const classified = await run(sh('read request; exec >&-; sleep 4'));
    const took = performance.now() - start;
    expect(classified).toEqual({
      terminal: { type: 'failed', reason: 'the child did not exit in time without writing a result' },
      stepsUsed: 0,
      promptTokens: 0,
      completionTokens: 0,
      unaccounted: 'the child left no result',
    });
    expect(took).toBeGreaterThanOrEqual(1_990);
    expect(took).toBeLessThan(3_500);
  });
});
