import { isTerminal, type ProcessStatus } from '@libos/protocol';
import { UnrecoverableError } from 'bullmq';

/**
 * What a launch job shows on Bull Board besides its data (`{pid, attempt}`, which names the
 * launch and nothing a queue reader could act with): the process's goal (cut), image and status,
 * and the outcome once it ended. It is the job's progress when `LaunchBoard` writes one, and part
 * of a finished job's return value (`AttemptSummary`).
 */
export interface LaunchProgress {
  pid: string;
  attempt: number;
  goal: string;
  image: string;
  status: ProcessStatus;
  outcome?: { type: string; reason?: string };
}

/** Goals in progress are cut to this many characters (the board is a summary). */
export const PROGRESS_GOAL_CHARS = 200;

export function progressGoal(goal: string): string {
  return goal.length > PROGRESS_GOAL_CHARS ? `${goal.slice(0, PROGRESS_GOAL_CHARS - 1)}…` : goal;
}

/**
 * How long a launch runs before its progress is written. The board shows a running launch's goal
 * and image from then on; a shorter launch that exits writes none (its return value says the
 * same), which spares a trivial child two Redis calls of the worker's (5.7 → 3.7 a child in
 * `bench/redis-calls.ts`).
 */
export const PROGRESS_AFTER_MS = 1_000;

/**
 * Writes a launch job's progress where the board has a use for it: once the launch has run
 * `afterMs` (status `running`), and at its end if progress was written before (so it never stays
 * `running`) or the process failed or was killed (a failed job has no return value; its card
 * shows the goal and image from the progress). `write` is never awaited on the child's path.
 */
export class LaunchBoard {
  #timer: NodeJS.Timeout | undefined;
  #written = false;

  constructor(
    private readonly write: (progress: LaunchProgress) => void,
    private readonly afterMs = PROGRESS_AFTER_MS,
  ) {}

  /** The launch's state now: `running` from the claim, then its ending's status. */
  readonly update = (progress: LaunchProgress): void => {
    this.close();
    if (progress.status === 'running') {
      this.#timer = setTimeout(() => this.#send(progress), this.afterMs);
    } else if (this.#written || progress.status === 'failed' || progress.status === 'killed') {
      this.#send(progress);
    }
  };

  /** The job is over, its ending told or not: nothing more is written. */
  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #send(progress: LaunchProgress): void {
    this.#written = true;
    this.write(progress);
  }
}

/**
 * Thrown from the job's processor when the process ended `failed` or `killed`, so BullMQ records
 * a failed job whose reason is the outcome's: a failed process never shows as a completed job.
 * Unrecoverable: BullMQ never retries it (a new attempt is the kernel's, through a resume).
 */
export class ProcessEnded extends UnrecoverableError {
  override readonly name = 'ProcessEnded';
}

export function endedJobError(
  pid: string,
  status: ProcessStatus,
  outcome: { type: string; reason?: string } | null,
): ProcessEnded | undefined {
  if (!isTerminal(status) || status === 'exited') return undefined;
  const why = outcome ? `${outcome.type}${outcome.reason ? `: ${outcome.reason}` : ''}` : 'no outcome';
  return new ProcessEnded(`${pid} ${status} (${why})`);
}
