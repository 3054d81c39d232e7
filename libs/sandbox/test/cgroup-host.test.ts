import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readlinkSync, rmdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, it } from 'vitest';
import { CgroupHost } from '../src/cgroups.js';
import { DEFAULT_LIMITS } from '../src/index.js';

// Real cgroups (what CI has: root and cgroup v1 controllers, or a v2 subtree it may write).
const host = CgroupHost.detect(`libos-cgroup-host-test-${process.pid}`);
const bases = new Set<string>();
afterAll(() => {
  host?.removeAll();
  for (const base of bases) rmdirSync(base);
});

/** This process's descriptors open on a `cgroup.procs`. */
function heldProcs(): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).endsWith('/cgroup.procs');
    } catch {
      return false;
    }
  }).length;
}

async function started(): Promise<ChildProcess> {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  await once(child, 'spawn');
  return child;
}

it('kills what is left before a launch unless the last release saw the cgroup empty; holds its cgroup.procs open until removed', async () => {
  expect(host, 'no writable cgroups on this host').toBeDefined();
  const cgroup = host!.open('u1', DEFAULT_LIMITS);
  for (const path of cgroup.paths) bases.add(dirname(path));
  const before = heldProcs();

  const left = await started();
  await cgroup.join(left.pid!);
  expect(cgroup.pids()).toEqual([left.pid]);
  expect(heldProcs()).toBe(before + cgroup.paths.length);
  // Never seen empty: the next launch's open kills what is there.
  host!.open('u1', DEFAULT_LIMITS);
  const [, signal] = await once(left, 'exit');
  expect(signal).toBe('SIGKILL');

  // A release saw it empty: the next open does not look (so it kills nothing, even if it should).
  expect(cgroup.isEmpty()).toBe(true);
  const kept = await started();
  await cgroup.join(kept.pid!);
  host!.open('u1', DEFAULT_LIMITS);
  await sleep(100);
  expect([kept.exitCode, kept.signalCode, cgroup.pids()]).toEqual([null, null, [kept.pid]]);
  // Only once: the open after that looks again.
  host!.open('u1', DEFAULT_LIMITS);
  await once(kept, 'exit');
  expect(kept.signalCode).toBe('SIGKILL');

  expect(heldProcs()).toBe(before + cgroup.paths.length);
  host!.removeAll();
  expect(heldProcs()).toBe(before);
  await expect(cgroup.join(process.pid)).rejects.toThrow('the sandbox cgroup was removed');
});
