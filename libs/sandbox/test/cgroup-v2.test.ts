import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { contractRun, type LaunchControl } from '@libos/runner';
import { afterAll, expect, it } from 'vitest';
import { DEFAULT_LIMITS, processesOfUid, Sandbox } from '../src/index.js';

// The cgroup v2 path on this host's kernel. CI's machines mount cgroup v1 controllers (memory,
// pids, freezer) at /sys/fs/cgroup; a cgroup2 hierarchy mounted beside them has none of those
// controllers, but every v2 cgroup has cgroup.procs, cgroup.freeze and cgroup.kill: joining,
// pausing and killing a sandbox are exercised here for real, memory.max and pids.max only where
// the hierarchy offers the controllers (a v2 host's).
const work = mkdtempSync(join(tmpdir(), 'sandbox-v2-'));
chmodSync(work, 0o777);
const hierarchy = join(work, 'cgroup2');
mkdirSync(hierarchy);
execFileSync('mount', ['-t', 'cgroup2', 'none', hierarchy]);
const root = join(hierarchy, `libos-v2-test-${process.pid}`);
mkdirSync(root);
const locks = join(work, '.locks');
const sandbox = Sandbox.create({
  mode: 'auto',
  uids: { first: 31_400, last: 31_499 },
  lockDir: locks,
  runtime: [],
  hide: [locks, hierarchy],
  cgroupName: 'unused-with-a-root',
  cgroupRoot: root,
  bwrap: 'bwrap',
  prlimit: '/usr/bin/prlimit',
});
afterAll(async () => {
  sandbox.close();
  try {
    // A cgroup whose last process has just exited may refuse rmdir (EBUSY) for a moment.
    await eventually(() => {
      for (const dir of readdirSync(root)) tryRmdir(join(root, dir));
      return tryRmdir(root);
    });
  } finally {
    execFileSync('umount', ['--lazy', hierarchy]);
    rmSync(work, { recursive: true, force: true });
  }
});

function tryRmdir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch {
    return false;
  }
}

const words = (file: string) => readFileSync(file, 'utf8').split(/\s+/).filter(Boolean);

async function eventually(check: () => boolean, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

it('reports cgroup v2 with its freezer, and memory and pids as far as the hierarchy offers them', () => {
  const offered = words(join(hierarchy, 'cgroup.controllers'));
  expect(sandbox.report).toMatchObject({
    cgroupVersion: 2,
    freeze: true,
    cgroupMemory: offered.includes('memory'),
    cgroupPids: offered.includes('pids'),
  });
  expect(sandbox.describe()).toMatch(/cgroup v2 (memory\+)?(pids\+)?freezer/);
  if (!offered.includes('memory'))
    expect(sandbox.report.missing).toContain('cgroups: no memory controller (cgroup v2)');
});

it('runs the sandbox in its v2 cgroup: pause stops every member, resume continues them, cgroup.kill empties it', async () => {
  const confinement = sandbox.confine({
    cwd: work,
    paths: [],
    runtime: [],
    limits: DEFAULT_LIMITS,
    network: 'host',
  });
  let control: LaunchControl | undefined;
  const done = contractRun({
    command: 'sh',
    args: ['-c', 'read -r request; setsid sleep 30 & sleep 30 & wait', 'sh', '{result_file}'],
    input: {},
    kind: 'k',
    id: 't',
    deadlineMs: 20_000,
    cancelGraceMs: 100,
    confinement,
    onSpawn: (c) => {
      control = c;
    },
  });
  const uid = confinement.uid!;
  const cgroup = join(root, `u${uid}`);
  const members = () => words(join(cgroup, 'cgroup.procs')).map(Number);
  const state = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];

  // sh and its two sleeps (one in a session of its own), all in the cgroup with the sandbox's init
  await eventually(() => processesOfUid(uid).length >= 3);
  const own = processesOfUid(uid);
  expect(members()).toEqual(expect.arrayContaining(own));
  expect(members().length).toBeGreaterThan(own.length);

  // Pause lists the processes from the v2 cgroup, frozen meanwhile so none forks past the list,
  // and stops each; the setsid one is no member of the child's process group, but of the cgroup.
  control!.pause();
  await eventually(() => own.every((pid) => state(pid) === 'T'));
  control!.resume();
  await eventually(() => own.every((pid) => state(pid) !== 'T'));

  // The cgroup's kill alone (not the runner's group signal): every process, the setsid one too.
  confinement.signal('SIGKILL');
  await eventually(() => members().length === 0 && processesOfUid(uid).length === 0);
  expect((await done).terminal.type).toBe('failed');
});
