import { createRequire } from 'node:module';
import { getSystemErrorName } from 'node:util';

/** What one child may use on its host. Enforced by cgroups where the host has them, else rlimits. */
export interface SandboxLimits {
  /** Memory of the whole sandbox (cgroup memory limit; tmpfs pages count too). */
  memoryMb: number;
  /** Processes and threads of the whole sandbox (cgroup pids; RLIMIT_NPROC of its own uid). */
  pids: number;
  /** CPU time of each process (RLIMIT_CPU, whole seconds rounded up); none when undefined. */
  cpuMs?: number | undefined;
  /** The largest file a process may write (RLIMIT_FSIZE). */
  fileSizeMb: number;
  /** Open files per process (RLIMIT_NOFILE). */
  openFiles: number;
}

/** Safe for an agent CLI (a Node process with its tools), small enough that a runaway is contained. */
export const DEFAULT_LIMITS: SandboxLimits = {
  memoryMb: 2048,
  pids: 256,
  fileSizeMb: 1024,
  openFiles: 1024,
};

/** The processes bwrap itself adds to a sandbox (its launcher and the namespace's init). */
export const LAUNCHER_PROCESSES = 2;

/** The per-process limits (rlimits), soft and hard alike: prlimit(1)'s option names and values. */
function rlimits(limits: SandboxLimits): Array<[keyof typeof RESOURCE, number]> {
  const list: Array<[keyof typeof RESOURCE, number]> = [
    ['nofile', limits.openFiles],
    ['fsize', limits.fileSizeMb * 1024 * 1024],
    // Counted per uid, and every sandbox has a uid of its own: a second bound on its processes.
    ['nproc', limits.pids + LAUNCHER_PROCESSES],
  ];
  if (limits.cpuMs !== undefined) list.push(['cpu', Math.max(1, Math.ceil(limits.cpuMs / 1000))]);
  return list;
}

/** prlimit(1) options for the limits that are per process (rlimits). */
export function rlimitArgs(limits: SandboxLimits): string[] {
  return rlimits(limits).map(([name, value]) => `--${name}=${value}`);
}

/** Linux's resource numbers (asm-generic: x86_64 and aarch64 alike). */
const RESOURCE = { cpu: 0, fsize: 1, nproc: 6, nofile: 7 } as const;

type Prlimit = (pid: number, resource: number, set: Buffer, old: null) => number;
let prlimit: { call: Prlimit; errno: () => number } | null | undefined;

function bindPrlimit(): typeof prlimit {
  if (prlimit !== undefined) return prlimit;
  prlimit = null;
  // `struct rlimit` as written below: two 64-bit little-endian values.
  if (process.platform !== 'linux' || !['x64', 'arm64'].includes(process.arch)) return prlimit;
  try {
    const koffi: typeof import('koffi') = createRequire(import.meta.url)('koffi');
    const libc = koffi.load('libc.so.6');
    const call = libc.func('int prlimit(int pid, int resource, void *set, void *old)') as Prlimit;
    prlimit = { call, errno: () => koffi.errno() };
  } catch {
    // no prebuilt koffi for this host, or no glibc: prlimit(1) sets them
  }
  return prlimit;
}

/** Whether `setRlimits` can set another process's limits here (glibc's prlimit through koffi). */
export function setRlimitsAvailable(): boolean {
  return bindPrlimit() !== null;
}

/**
 * Sets `pid`'s rlimits from outside, as prlimit(1) would from inside, but without a program run
 * per launch: the sandbox's init gets them while bwrap holds it, and every process it starts
 * inherits them. Throws an errno error (`ESRCH`: the process is gone).
 */
export function setRlimits(pid: number, limits: SandboxLimits): void {
  const bound = bindPrlimit();
  if (!bound) throw new Error('prlimit is not available on this host');
  const value = Buffer.alloc(16); // struct rlimit: rlim_cur, rlim_max
  for (const [name, limit] of rlimits(limits)) {
    value.writeBigUInt64LE(BigInt(limit), 0);
    value.writeBigUInt64LE(BigInt(limit), 8);
    if (bound.call(pid, RESOURCE[name], value, null) !== 0) {
      const code = getSystemErrorName(-bound.errno());
      // EPERM: above the spawner's own hard limit, which only CAP_SYS_RESOURCE raises (or a
      // security module's refusal).
      const why = code === 'EPERM' ? ': above the hard limit this worker may give, or not permitted' : '';
      throw Object.assign(new Error(`the sandbox's rlimit ${name}=${limit} cannot be set (${code}${why})`), {
        code,
      });
    }
  }
}
