import { isTerminal, type ProcessStatus } from '@libos/protocol';
import { UnrecoverableError } from 'bullmq';

/**
 * What a launch job shows on Bull Board besides its data (`{pid, attempt}`, which names the
 * launch and nothing a queue reader could act with): the process's goal (cut), image and status
 * as BullMQ progress, updated at the claim and at the end, and the outcome once it ended.
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
