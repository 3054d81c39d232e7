import type { ClaimedLaunch, Completion } from '@libos/protocol';
import { DEFAULT_CANCEL_GRACE_MS, DEFAULT_DEADLINE_MS } from '@libos/runner';

/**
 * The request's `input`: the spawn's input as given (`input`), its fields also at the top level
 * when it is an object (so engines that read `query`/`prompt`, such as the shims, work unchanged),
 * and the process's `goal`, `pid` and `parent_pid`, which win over spawn fields of those names.
 */
export interface ChildInput {
  [field: string]: unknown;
  goal: string;
  pid: string;
  parent_pid: string | null;
  input: ClaimedLaunch['input'];
}

export function childInput(
  claimed: Pick<ClaimedLaunch, 'goal' | 'pid' | 'parent_pid' | 'input'>,
): ChildInput {
  const spread =
    claimed.input !== null && typeof claimed.input === 'object' && !Array.isArray(claimed.input)
      ? claimed.input
      : {};
  return {
    ...spread,
    goal: claimed.goal,
    pid: claimed.pid,
    parent_pid: claimed.parent_pid,
    input: claimed.input,
  };
}

/** What the runner gets for one claimed attempt (the environment and hooks are added by the caller). */
export interface LaunchPlan {
  command: string;
  args: string[];
  /** The process's cwd; the worker creates nothing, a missing one fails the spawn. */
  cwd: string;
  /** The request id: the attempt id `<pid>:<attempt>`. */
  id: string;
  kind: string;
  input: ChildInput;
  deadlineMs: number;
  cancelGraceMs: number;
  maxSteps?: number;
  /** The launch's JSON Schema, sent as the request's `schema`. */
  schema?: Record<string, unknown>;
}

/** A launch, or the ending of an attempt whose budget left nothing to launch with. */
export type Plan = { kind: 'launch'; launch: LaunchPlan } | { kind: 'exhausted'; completion: Completion };

/**
 * The contract request of a claimed attempt: the image's command, args and kind; input as
 * `childInput`; `limits.max_steps` from the remaining steps budget; deadline = the
 * image's (default 10 min), capped by the remaining `wall_ms` budget; grace = the image's (5 s).
 * A budget already spent (0 steps or 0 ms left) ends the attempt without spawning anything.
 */
export function planLaunch(claimed: ClaimedLaunch): Plan {
  const spec = claimed.image_spec;
  const steps = remaining(claimed.resource_budget.steps.remaining);
  const wall = remaining(claimed.resource_budget.wall_ms.remaining);
  if (steps === 0 || wall === 0) {
    return {
      kind: 'exhausted',
      completion: {
        terminal:
          steps === 0
            ? { type: 'max_steps', reason: 'no steps left in the budget' }
            : { type: 'timed_out', reason: 'no wall time left in the budget' },
        usage: { prompt_tokens: 0, completion_tokens: 0, steps: 0, wall_ms: 0 },
      },
    };
  }
  const imageDeadline = spec.deadline_ms ?? DEFAULT_DEADLINE_MS;
  return {
    kind: 'launch',
    launch: {
      command: spec.command,
      args: spec.args,
      cwd: claimed.cwd,
      id: claimed.attempt_id,
      kind: spec.kind ?? claimed.image,
      input: childInput(claimed),
      deadlineMs: wall === undefined ? imageDeadline : Math.min(imageDeadline, wall),
      cancelGraceMs: spec.cancel_grace_ms ?? DEFAULT_CANCEL_GRACE_MS,
      ...(steps === undefined ? {} : { maxSteps: steps }),
      ...(claimed.schema === null ? {} : { schema: claimed.schema }),
    },
  };
}

/** A budget dimension's remaining amount as a whole number; undefined when unlimited. */
function remaining(value: number | null): number | undefined {
  return value === null ? undefined : Math.max(0, Math.floor(value));
}
