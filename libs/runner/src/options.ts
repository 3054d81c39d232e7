import { z } from 'zod';

export const DEFAULT_DEADLINE_MS = 600_000;
export const DEFAULT_CANCEL_GRACE_MS = 5_000;
/** How long the runner waits for the exit status after a clean stdout EOF (reference §1.8). */
export const EXIT_WAIT_MS = 2_000;
/** The largest result file read by default (16 MiB): a bigger one is refused unread. */
export const DEFAULT_MAX_RESULT_BYTES = 16 * 1024 * 1024;

const millis = z.number().int().min(0);

/** The data part of a launch (the hooks are typed separately; zod cannot check functions). */
export const contractRunOptionsSchema = z.object({
  command: z.string().min(1),
  args: z.array(z.string()),
  input: z.unknown(),
  kind: z.string(),
  id: z.string(),
  deadlineMs: millis.min(1).default(DEFAULT_DEADLINE_MS),
  cancelGraceMs: millis.default(DEFAULT_CANCEL_GRACE_MS),
  cwd: z.string().optional(),
  /** The environment to start from instead of the runner's own (undefined values are dropped). */
  env: z.record(z.string(), z.string().optional()).optional(),
  /** Overlaid on the inherited (or given) environment. */
  extraEnv: z.record(z.string(), z.string()).optional(),
  maxSteps: z.number().int().min(1).optional(),
  schema: z.unknown().optional(),
  /** A result file larger than this is not read: the launch is `failed` (unreadable, too large). */
  maxResultBytes: z.number().int().min(1).default(DEFAULT_MAX_RESULT_BYTES),
  /** The directory the private result directory is made in; the runner's TMPDIR when unset. */
  resultParent: z.string().regex(/^\//, 'an absolute path').optional(),
});

/** Minimal structured logger (pino's `debug(obj, msg)` fits). */
export interface RunnerLogger {
  debug(fields: object, message: string): void;
}

/** The running child, for callers that stop and continue it (the worker's pause/resume). */
export interface LaunchControl {
  /** The child's pid, which is also its process group id (it is spawned detached). */
  readonly pid: number;
  readonly paused: boolean;
  /** SIGSTOP the whole group and freeze the runner's clock (deadline, grace, exit wait). */
  pause(): void;
  /** SIGCONT the whole group and restart the clock with the time it had left. */
  resume(): void;
  /**
   * The contract's graceful cancel, now: close the child's stdin (EOF), give it `cancelGraceMs`
   * to write its result and exit, then kill the group. The run resolves as usual and its result
   * is classified on its merits (an `interrupted` result is `failed` "interrupted: …" with its
   * usage), never as `timed_out`. It does not resume a paused child: resume it first.
   */
  cancel(): void;
  /** Send a signal to the whole group; false when the group is gone. */
  signal(signal: NodeJS.Signals): boolean;
}

export interface ContractRunHooks {
  /** Aborting tears the child down, removes the directory and rejects with an AbortError. */
  signal?: AbortSignal;
  /** Called once the child is spawned. The control is inert after the run resolves. */
  onSpawn?: (control: LaunchControl) => void;
  /** The child's stderr: inherited by default, never parsed. A function receives its bytes. */
  stderr?: 'inherit' | 'ignore' | ((chunk: Uint8Array) => void);
  /**
   * A copy of the child's stdout bytes, for humans (logs). The runner still drains stdout unread
   * and the contract is unchanged; the tap must not keep the chunk, and a throw is ignored.
   */
  stdout?: (chunk: Uint8Array) => void;
  logger?: RunnerLogger;
  /**
   * How the child is contained on this host (a sandbox: its own uid, namespaces, limits). Without
   * one the child runs as the runner's own user in a process group of its own.
   */
  confinement?: Confinement;
}

/** What to spawn for a contained child: a launcher (e.g. bwrap) that runs its argv in a sandbox. */
export interface ConfinedSpawn {
  command: string;
  args: string[];
  /** The launcher's own cwd (the child's cwd is set inside the sandbox). */
  cwd?: string;
  uid?: number;
  gid?: number;
  /**
   * With a handshake the launcher gets two more pipes, fd 3 (it reports where the child runs)
   * and fd 4 (it waits there until released); `started` then places the child and releases it
   * before the request is written.
   */
  handshake: boolean;
  /**
   * Open descriptors the launcher gets next, in order: from fd 5 with a handshake, else from fd 3.
   * The runner closes its own copies once the launcher is spawned.
   */
  fds?: number[];
}

/**
 * Containment of one launch, as the runner uses it. Implemented by `@libos/sandbox`; the runner
 * knows nothing of uids, namespaces or cgroups. Every method but `spawn` must not throw.
 */
export interface Confinement {
  /**
   * Before the spawn: make the private result directory the child's and say what to spawn
   * instead of `command`/`args` (whose `{result_file}` is already replaced). A rejection is a
   * launch that failed to start (`child spawn failed: <message>`).
   */
  spawn(
    child: {
      command: string;
      args: string[];
      cwd?: string;
      env: Readonly<Record<string, string | undefined>>;
    },
    resultDir: string,
  ): Promise<ConfinedSpawn>;
  /** With a handshake: fd 3 and fd 4 of the launcher. A rejection fails the launch as above. */
  started(pid: number, report: NodeJS.ReadableStream, release: NodeJS.WritableStream): Promise<void>;
  /** Stop, continue or kill every process of the launch, descendants included. */
  signal(signal: 'SIGSTOP' | 'SIGCONT' | 'SIGKILL'): void;
  /** After the launch is reaped: give back what it held (its uid, its cgroups). */
  release(): Promise<void>;
}

export type ContractRunOptions = z.input<typeof contractRunOptionsSchema> & ContractRunHooks;
export type LaunchSpec = z.output<typeof contractRunOptionsSchema>;
