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

/** prlimit(1) options for the limits that are per process (rlimits). */
export function rlimitArgs(limits: SandboxLimits): string[] {
  const args = [
    `--nofile=${limits.openFiles}`,
    `--fsize=${limits.fileSizeMb * 1024 * 1024}`,
    // Counted per uid, and every sandbox has a uid of its own: a second bound on its processes.
    `--nproc=${limits.pids + LAUNCHER_PROCESSES}`,
  ];
  if (limits.cpuMs !== undefined) args.push(`--cpu=${Math.max(1, Math.ceil(limits.cpuMs / 1000))}`);
  return args;
}
