// What the benchmarks read of other processes, from /proc (Linux): CPU time and resident memory.
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';

/** /proc/<pid>/stat's fields after the command name (field 3 onwards), or undefined once gone. */
function statFields(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ');
  } catch {
    return undefined;
  }
}

/** CPU milliseconds of a process itself and of the children it reaped (clock ticks are 10 ms). */
export function cpuMs(pid: number | undefined): { self: number; children: number } {
  const fields = pid === undefined ? undefined : statFields(pid);
  if (!fields) return { self: 0, children: 0 };
  const tick = (i: number) => Number(fields[i]) * 10;
  return { self: tick(11) + tick(12), children: tick(13) + tick(14) };
}

/** Self plus reaped-children CPU ms of one process (0 once it is gone). */
export function cpuTotalMs(pid: number | undefined): number {
  const { self, children } = cpuMs(pid);
  return self + children;
}

/** A process's command line, its arguments joined by spaces ('' once it is gone). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

/** The live descendants of `pid` (children, grandchildren, …), found through every /proc/<n>/stat's ppid. */
export function descendants(pid: number): number[] {
  const byParent = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const ppid = Number(statFields(Number(entry))?.[1]);
    if (!Number.isFinite(ppid)) continue;
    const siblings = byParent.get(ppid) ?? [];
    siblings.push(Number(entry));
    byParent.set(ppid, siblings);
  }
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of byParent.get(queue.shift()!) ?? []) {
      out.push(child);
      queue.push(child);
    }
  }
  return out;
}

/**
 * CPU ms of a process tree: each live process's own time plus what it reaped. Each tick is counted
 * once: a descendant's time moves into its parent's reaped figure when it is reaped.
 */
export function treeCpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  return [pid, ...descendants(pid)].reduce((sum, one) => sum + cpuTotalMs(one), 0);
}

/** Resident memory in MiB: now (VmRSS) and the peak since start or the last `resetPeakRss` (VmHWM). */
export function rssMiB(pid: number | undefined): { rss: number; peak: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rss: +(kib('VmRSS') / 1024).toFixed(1), peak: +(kib('VmHWM') / 1024).toFixed(1) };
  } catch {
    return { rss: 0, peak: 0 };
  }
}

/** Resets a process's VmHWM to its current RSS (`5` to clear_refs; needs to own it or be root). */
export function resetPeakRss(pid: number | undefined): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    // Not ours to reset: the peak is then since the process started.
  }
}

/**
 * The local ports of a process's TCP sockets (IPv4 and IPv6): its descriptors' socket inodes
 * matched against its network namespace's /proc/<pid>/net/tcp{,6}. A Redis client's address in
 * CLIENT LIST or MONITOR is `<ip>:<one of these>`.
 */
export function tcpPorts(pid: number): Set<number> {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
        if (inode) inodes.add(inode);
      } catch {}
    }
  } catch {
    return new Set();
  }
  const ports = new Set<number>();
  for (const table of [`/proc/${pid}/net/tcp`, `/proc/${pid}/net/tcp6`]) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      if (local && inodes.has(fields[9] ?? '')) ports.add(Number.parseInt(local.split(':')[1] ?? '', 16));
    }
  }
  return ports;
}
