import { spawn } from 'node:child_process';
import { chmodSync, closeSync, mkdtempSync, openSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type Launched,
  PosixSpawnError,
  type PosixSpawnRequest,
  posixSpawn,
  posixSpawnAvailable,
} from '../src/posix-spawn.js';

const dir = mkdtempSync(join(tmpdir(), 'posix-spawn-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function launch(script: string, more: Partial<PosixSpawnRequest> = {}): Promise<Launched> {
  return posixSpawn({
    command: 'sh',
    args: ['-c', script],
    cwd: undefined,
    env: process.env,
    stderr: 'inherit',
    extraPipes: [],
    fds: [],
    ...more,
  });
}

async function output(launched: Launched | Promise<Launched>): Promise<{ text: string; status: number }> {
  const child = await launched;
  child.stdin.end();
  return { text: await textOf(child.stdout), status: await child.exit };
}

async function textOf(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

// The runner's conformance suites (outcomes, deadline, teardown) run through this launcher on
// this host; these tests pin what Node's spawn did that posix_spawn must be told to do.
describe('posixSpawn', () => {
  it('is what the runner launches with on this host (Linux, glibc, koffi)', () => {
    expect(posixSpawnAvailable()).toBe(true);
  });

  it('makes the child a session and group leader, with no signal ignored or blocked', async () => {
    // Node ignores SIGPIPE itself: a child inheriting that would not die writing to a closed pipe.
    // `exec`: the launched process itself reads its status (a shell blocks signals around forks).
    const child = await launch('exec cat /proc/self/status');
    const { text, status } = await output(child);
    const field = (name: string) => text.match(new RegExp(`^${name}:\\s*(\\S+)$`, 'm'))?.[1];
    expect([field('Pid'), field('NSpgid'), field('NSsid')]).toEqual(Array(3).fill(String(child.pid)));
    expect(field('SigIgn')).toMatch(/^0+$/);
    expect(field('SigBlk')).toMatch(/^0+$/);
    expect(status).toBe(0);
  });

  it('finds the command on the PATH of the environment it is given, not on ours', async () => {
    const probe = join(dir, 'libos-path-probe');
    writeFileSync(probe, '#!/bin/sh\necho "found $0"\n');
    chmodSync(probe, 0o755);
    const found = await output(
      posixSpawn({
        command: 'libos-path-probe',
        args: [],
        cwd: undefined,
        env: { PATH: `/nonexistent:${dir}:/usr/bin:/bin` },
        stderr: 'inherit',
        extraPipes: [],
        fds: [],
      }),
    );
    expect(found.text).toBe(`found ${probe}\n`);
    await expect(launch('', { command: 'libos-path-probe', args: [] })).rejects.toThrow(
      new PosixSpawnError('ENOENT', 'libos-path-probe'),
    );
  });

  it('skips a PATH entry that is not a directory, as exec does, instead of failing the launch', async () => {
    const probe = join(dir, 'libos-path-after-file');
    writeFileSync(probe, '#!/bin/sh\necho "found $0"\n');
    chmodSync(probe, 0o755);
    const notADirectory = join(dir, 'passed-as-a-directory');
    writeFileSync(notADirectory, '');
    const found = await output(
      posixSpawn({
        command: 'libos-path-after-file',
        args: [],
        cwd: undefined,
        env: { PATH: `${notADirectory}:${dir}:/usr/bin:/bin` },
        stderr: 'inherit',
        extraPipes: [],
        fds: [],
      }),
    );
    expect(found.text).toBe(`found ${probe}\n`);
  });

  it('runs in the cwd given, with exactly the environment given', async () => {
    const { text } = await output(launch('pwd; env | sort', { cwd: dir, env: { ONLY: 'this' } }));
    const [cwd, ...env] = text.trim().split('\n');
    expect(cwd).toBe(dir);
    // sh may export PWD itself; nothing of ours leaks in
    expect(env.filter((line) => !line.startsWith('PWD='))).toEqual(['ONLY=this']);
  });

  it('gives fds 3 onwards in order, even ones whose numbers the stdio pipes take, and no more than Node does', async () => {
    const file = join(dir, 'passed');
    writeFileSync(file, '');
    const fd = openSync(file, 'r');
    // The shell lists its own descriptors with a glob (its directory's descriptor among them, the
    // same in both runs), not `$(ls …)`: a command substitution's pipe end is closed in the shell
    // only after its fork, so `ls` saw it there or not, at random.
    const script =
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's parameter expansion
      'out=; for f in /proc/$$/fd/*; do out="$out ${f##*/}"; done; echo $out; readlink /proc/$$/fd/3 /proc/$$/fd/4';
    try {
      // Our fd 1 becomes the child's fd 4: a plan that dup2'd in place would hand it the stdout
      // pipe, which by then occupies fd 1.
      const { text } = await output(launch(script, { fds: [fd, 1] }));
      const [numbers, third, fourth] = text.split('\n');
      expect(third).toBe(file);
      expect(fourth).toBe(readlinkSync('/proc/self/fd/1'));
      // The same launch by Node's spawn: the same descriptors (any this process inherited without
      // close-on-exec among them; the sandbox's spawner closes those at its start).
      const node = spawn('sh', ['-c', script], { stdio: ['pipe', 'pipe', 'inherit', fd, 1] });
      if (!node.stdin || !node.stdout) throw new Error('no pipes to the Node-spawned child');
      node.stdin.end();
      const [nodeNumbers] = (await textOf(node.stdout)).split('\n');
      expect(numbers).toBe(nodeNumbers);
      expect(numbers).toMatch(/^0 1 2 (.* )?3 4\b/);
    } finally {
      closeSync(fd);
    }
  });

  it('reports an exit code as it is, and a death by signal n as 128 + n', async () => {
    expect((await output(launch('exit 7'))).status).toBe(7);
    expect((await output(launch('kill -TERM $$'))).status).toBe(143);
  });

  it('fails a file that cannot be executed with the reason, as Node does', async () => {
    const plain = join(dir, 'not-executable');
    writeFileSync(plain, 'echo no\n');
    chmodSync(plain, 0o644);
    await expect(launch('', { command: plain, args: [] })).rejects.toThrow(
      new PosixSpawnError('EACCES', plain),
    );
  });
});
