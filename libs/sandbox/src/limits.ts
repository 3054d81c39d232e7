import { readFileSync } from 'node:fs';

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

/**
 * The rlimits this process runs under, as the prlimit(1) options that would set them (the same
 * form `rlimitArgs` gives), read from /proc/self/limits: a launch whose limits are these inherits
 * them and needs no prlimit of its own (one exec fewer). Only limits whose soft and hard values are
 * equal count, since prlimit sets both; undefined when there is no such file.
 */
export function inheritedRlimits(text = readLimits()): string[] | undefined {
  if (text === undefined) return undefined;
  const value = (name: string): string | undefined => {
    const match = new RegExp(`^${name}\\s+(\\S+)\\s+(\\S+)`, 'm').exec(text);
    return match && match[1] === match[2] ? match[1] : undefined;
  };
  const args: string[] = [];
  for (const [name, option] of [
    ['Max open files', 'nofile'],
    ['Max file size', 'fsize'],
    ['Max processes', 'nproc'],
  ] as const) {
    const found = value(name);
    if (found !== undefined && found !== 'unlimited') args.push(`--${option}=${found}`);
  }
  const cpu = value('Max cpu time');
  if (cpu !== undefined && cpu !== 'unlimited') args.push(`--cpu=${cpu}`);
  return args;
}

function readLimits(): string | undefined {
  try {
    return readFileSync('/proc/self/limits', 'utf8');
  } catch {
    return undefined;
  }
}

/** Whether a launch asking for `wanted` (rlimitArgs) gets exactly that by inheriting `inherited`. */
export function inheritsRlimits(
  wanted: readonly string[],
  inherited: readonly string[] | undefined,
): boolean {
  return (
    inherited !== undefined &&
    wanted.length === inherited.length &&
    wanted.every((arg) => inherited.includes(arg))
  );
}
