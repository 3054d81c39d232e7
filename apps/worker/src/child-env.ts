import type { ClaimedLaunch } from '@libos/protocol';
import { hostedChildEntry, libosHandoff } from '@libos/sdk/handoff';

/** What makes a launched child itself: its coordinator, its pid and its own process token. */
export interface ChildIdentity {
  url: string;
  pid: string;
  token: string;
}

/**
 * What every child inherits from its worker: the worker's environment minus every `LIBOS_*`
 * variable (a worker may hold secrets such as `LIBOS_ADMIN_TOKEN`, and its settings are not the
 * child's). Taken once at start: reading `process.env` goes through the C++ environment per
 * variable, which is a measurable part of a trivial launch.
 */
export function inheritedEnvironment(workerEnv: NodeJS.ProcessEnv): Readonly<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(workerEnv)) {
    if (value !== undefined && !name.startsWith('LIBOS_')) env[name] = value;
  }
  return env;
}

/**
 * A child's whole environment: the inherited one, then `WORKFLOW_HOST` (the `hosted` handoff, so
 * a workflow program in the child launches its agents as libos children of it), then the image's
 * `env` (which may set `WORKFLOW_HOST` blank to opt out), then the child's identity last, so an
 * image cannot override it.
 */
export function childEnvironment(
  inherited: Readonly<Record<string, string>>,
  imageEnv: Record<string, string> | undefined,
  identity: ChildIdentity,
  handoff?: string,
): Record<string, string> {
  return {
    ...inherited,
    ...(handoff === undefined ? {} : { WORKFLOW_HOST: handoff }),
    ...imageEnv,
    LIBOS_URL: identity.url,
    LIBOS_PID: identity.pid,
    LIBOS_TOKEN: identity.token,
  };
}

/**
 * The `WORKFLOW_HOST` a launched child gets (reference §4, version 2): its hosted agents run the
 * SDK's `hosted-child.js` with this worker's node, each a libos child of it, named
 * `<attempt id>-sr-<n>`; the block holds its remaining `children` budget (at most `maxCalls`, and
 * `maxCalls` when unlimited; at least 1: the kernel refuses a spawn past the budget); each
 * launch's deadline is the child's own.
 */
export function hostedHandoff(
  claimed: Pick<ClaimedLaunch, 'pid' | 'attempt_id' | 'resource_budget'>,
  deadlineMs: number,
  maxCalls: number,
): string {
  const children = claimed.resource_budget.children.remaining;
  return libosHandoff({
    exe: process.execPath,
    entry: hostedChildEntry(),
    pid: claimed.pid,
    attemptId: claimed.attempt_id,
    calls: children === null ? maxCalls : Math.min(maxCalls, Math.max(1, Math.floor(children))),
    deadlineMs,
  });
}
