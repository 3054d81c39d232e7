import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from './helpers.js';

function run(file: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(file, args, { env }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let bin: string;
beforeAll(async () => {
  // The script calls `libos` by name: a `libos` on PATH that runs this checkout's sources.
  bin = await mkdtemp(join(tmpdir(), 'libos-completion-'));
  const wrapper = join(bin, 'libos');
  await writeFile(
    wrapper,
    `#!/bin/sh\nexec '${process.execPath}' --import tsx --conditions=@libos/source '${CLI}' "$@"\n`,
  );
  await chmod(wrapper, 0o755);
});
afterAll(async () => {
  await rm(bin, { recursive: true, force: true });
});

/** What bash's TAB offers for `line` (the words typed so far; a trailing space starts a new word). */
async function complete(line: string): Promise<string[]> {
  const words = line.split(' ');
  const script = [
    'source <(libos completion bash)',
    `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')})`,
    `COMP_CWORD=${words.length - 1}`,
    `COMP_LINE='${line}'`,
    `COMP_POINT=${line.length}`,
    '__libos_complete 2>/dev/null',
    `printf "%s\\n" "\${COMPREPLY[@]}"`,
  ].join('\n');
  const ran = await run('bash', ['-c', script], { ...process.env, PATH: `${bin}:${process.env.PATH}` });
  expect(ran.code, ran.stderr).toBe(0);
  return ran.stdout.split('\n').filter(Boolean);
}

describe('shell completion', () => {
  it('bash completes subcommands', async () => {
    expect(await complete('libos si')).toEqual(['signal']);
    const all = await complete('libos ');
    for (const name of ['up', 'ps', 'run', 'signal', 'demo', 'completion', 'viz'])
      expect(all).toContain(name);
  }, 30_000);

  it('bash completes signal names and --status values', async () => {
    expect(await complete('libos signal p1 ')).toEqual(['pause', 'resume', 'cancel', 'terminate']);
    expect(await complete('libos ps --status run')).toEqual(['runnable', 'running']);
  }, 30_000);

  it('zsh gets a script too; an unknown shell is one line', async () => {
    const zsh = await run(process.execPath, [
      '--import',
      'tsx',
      '--conditions=@libos/source',
      CLI,
      'completion',
      'zsh',
    ]);
    expect(zsh.code).toBe(0);
    expect(zsh.stdout).toMatch(/^#compdef libos/m);
    const bad = await run(process.execPath, [
      '--import',
      'tsx',
      '--conditions=@libos/source',
      CLI,
      'completion',
      'tcsh',
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr.trimEnd().split('\n')).toHaveLength(1);
  }, 30_000);
});
