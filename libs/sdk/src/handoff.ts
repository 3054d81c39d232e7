import { fileURLToPath } from 'node:url';

// libos as a `hosted` workflow's host (reference §4): what a worker puts in a launched child's
// `WORKFLOW_HOST`, so a workflow program inside the child launches its agents through
// `hosted-child.js`, each one a libos child of that child. Imports nothing but node: the worker
// loads this beside its own code.

/** The `ids` block when the child's `children` budget is unlimited (the worker's `LIBOS_HOSTED_CALLS`). */
export const HOSTED_CALLS_DEFAULT = 1000;

/** The bridge a hosted launch runs: a contract child that runs its request as a libos child. */
export function hostedChildEntry(): string {
  return fileURLToPath(new URL('../dist/hosted-child.js', import.meta.url));
}

export interface LibosHandoffOptions {
  /** The node that runs the bridge (the worker's own). */
  exe: string;
  /** `hostedChildEntry()` unless a deployment keeps it elsewhere. */
  entry: string;
  /** The launched child's pid and attempt id (`<pid>:<attempt>`), for ids unique to this attempt. */
  pid: string;
  attemptId: string;
  /** How many agents the program may launch: the `ids` block. At least 1. */
  calls: number;
  /** Each agent launch's wall deadline: the child's own. */
  deadlineMs: number;
}

/**
 * The version 2 handoff (`{"v":2,"transport":"result_file",…}`): `exe` + `child_args` run the
 * bridge with the call's result path; agent `n` is `<attempt id>-sr-<n>`, ordinals `1..calls`; no
 * journal or sidecar (in memory); the extension `libos` names the hosting process.
 */
export function libosHandoff(options: LibosHandoffOptions): string {
  return JSON.stringify({
    v: 2,
    transport: 'result_file',
    exe: options.exe,
    child_args: [options.entry, '--result-file', '{result_file}'],
    child_id: `${options.attemptId}-sr-{n}`,
    ids: [1, Math.max(1, Math.floor(options.calls))],
    deadline_ms: Math.max(1, Math.floor(options.deadlineMs)),
    libos: { pid: options.pid, attempt_id: options.attemptId },
  });
}
