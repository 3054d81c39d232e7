// CPU of whole process trees through a cgroup v1 `cpuacct` group of the benchmark's own, where the
// host has one and lets us make it (root). /proc alone under-counts a sandboxed child: the time of
// a child run under bubblewrap's pid namespace (without --as-pid-1) never reaches its launcher's
// reaped-children figure (measured: a 280 ms busy loop shows 10 ms), while a cgroup counts every
// task that ran in it, reaped by whoever. Processes join with what they fork from then on.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { descendants, treeCpuMs } from './proc.js';

const CPUACCT = '/sys/fs/cgroup/cpuacct';

/** CPU ms so far of a set of process trees; `via` says how it is read. */
export interface TreeMeter {
  readonly via: 'cgroup' | 'proc';
  ms(): number;
  /** Moves what is left back to the root group and removes the group. */
  close(): void;
}

function procMeter(pids: readonly number[]): TreeMeter {
  return { via: 'proc', ms: () => pids.reduce((sum, pid) => sum + treeCpuMs(pid), 0), close: () => {} };
}

/** A meter of `pids` and all their descendants, present and future: a cgroup if possible, else /proc. */
export function treeMeter(name: string, pids: readonly number[]): TreeMeter {
  if (!existsSync(join(CPUACCT, 'cpuacct.usage'))) return procMeter(pids);
  const path = join(CPUACCT, `libos-bench-${process.pid}-${name}`);
  try {
    mkdirSync(path);
  } catch {
    return procMeter(pids);
  }
  const move = (into: string, pid: number | string) => {
    try {
      writeFileSync(join(into, 'cgroup.procs'), String(pid));
    } catch {
      // gone meanwhile
    }
  };
  // Each root first, then what it already forked: what forks later is born in the group.
  for (const pid of pids) for (const one of [pid, ...descendants(pid)]) move(path, one);
  return {
    via: 'cgroup',
    ms: () => Number(readFileSync(join(path, 'cpuacct.usage'), 'utf8')) / 1e6,
    close: () => {
      try {
        for (const pid of readFileSync(join(path, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
          move(CPUACCT, pid);
        }
        rmdirSync(path);
      } catch {
        // already removed
      }
    },
  };
}
