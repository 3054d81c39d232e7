import { readdirSync, readFileSync } from 'node:fs';

/** The state letter of /proc/<pid>/stat (R, S, T, Z, ...), or undefined when the process is gone. */
export function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const end = stat.lastIndexOf(')');
    return stat.slice(end + 2, end + 3);
  } catch {
    return undefined;
  }
}

/** Alive and not a zombie (an orphan's zombie is not ours to reap, so it counts as gone). */
export function isAlive(pid: number): boolean {
  const state = procState(pid);
  return state !== undefined && state !== 'Z' && state !== 'X';
}

/**
 * Live OS processes whose environment carries `name=value`. Workers pass their environment on to
 * the children they launch (minus `LIBOS_*`), so a marker set on the cluster's processes finds
 * every child and grandchild they started, wherever it was reparented.
 */
export function processesMarked(name: string, value: string): number[] {
  const needle = `${name}=${value}`;
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${pid}/environ`, 'latin1');
      if (environ.split('\0').includes(needle) && isAlive(pid)) found.push(pid);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/** `<pid> <state> <command line>`, for messages about processes left behind. */
export function describeProcess(pid: number): string {
  try {
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    return `${pid} ${procState(pid) ?? '?'} ${command}`;
  } catch {
    return `${pid} (gone)`;
  }
}

/**
 * Running from source, tsx starts an `esbuild --service` child whenever it must transform a file
 * that is not in its cache (a source edited meanwhile): tooling of the coordinator or worker
 * that ends with it, not a process the cluster launched.
 */
export function isSourceTooling(pid: number): boolean {
  try {
    const [command = '', ...args] = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return /(^|\/)esbuild$/.test(command) && args.some((arg) => arg.startsWith('--service'));
  } catch {
    return false;
  }
}

/** SIGKILL each pid that is still there. */
export function killAll(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
