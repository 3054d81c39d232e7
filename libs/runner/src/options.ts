import { z } from 'zod';

export const DEFAULT_DEADLINE_MS = 600_000;
export const DEFAULT_CANCEL_GRACE_MS = 5_000;
/** How long the runner waits for the exit status after a clean stdout EOF (reference §1.8). */
export const EXIT_WAIT_MS = 2_000;

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
  logger?: RunnerLogger;
}

export type ContractRunOptions = z.input<typeof contractRunOptionsSchema> & ContractRunHooks;
export type LaunchSpec = z.output<typeof contractRunOptionsSchema>;
