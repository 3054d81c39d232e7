// The pipe between a worker and its spawner (`spawner-process.ts`): one JSON object a line, in
// each direction, on the spawner's stdin (requests) and stdout (events). Both ends are our own
// processes of the same host; the child's data (its request, result, stderr) only passes through.
import type { ContractRunResult } from '@libos/contract';
import type { LaunchSpec } from '@libos/runner';
import type { ConfineRequest, IsolationReport } from './sandbox.js';

/** What one launch is, as sent: the runner's data options and how to contain the child. */
export interface RunRequest {
  op: 'run';
  /** The launch's id on this pipe (a counter; not the contract's request id). */
  id: number;
  launch: Partial<LaunchSpec> & Pick<LaunchSpec, 'command' | 'args' | 'kind' | 'id'>;
  /** The sandbox's policy; none: the child runs unconfined (isolation none). */
  confine?: ConfineRequest;
  /** Arm the watchdog for this launch before it is spawned: kill it once `deadline` passes. */
  fence?: { id: string; deadline: number };
  /** `tap`: the child's stderr comes back as `stderr` events. */
  stderr: 'inherit' | 'ignore' | 'tap';
  /** A copy of the child's stdout comes back as `stdout` events (the runner's `stdout` tap). */
  stdout: boolean;
  /** Send the runner's debug lines back as `log` events. */
  log: boolean;
  /** The caller's temp dir, when not the spawner's: the result parent of a launch that names none. */
  tmpdir?: string;
}

export type SpawnerRequest =
  | RunRequest
  | { op: 'pause' | 'resume' | 'cancel' | 'abort'; id: number }
  | { op: 'signal'; id: number; signal: NodeJS.Signals }
  | { op: 'beat'; fence: string; deadline: number };

export type SpawnerEvent =
  | { ev: 'ready'; report: IsolationReport; describe: string; tmpdir: string }
  | { ev: 'fatal'; message: string }
  | { ev: 'spawned'; id: number; pid: number; uid?: number }
  | { ev: 'stderr' | 'stdout'; id: number; data: string }
  | { ev: 'log'; id: number; fields: object; message: string }
  | { ev: 'done'; id: number; result: ContractRunResult }
  | { ev: 'aborted'; id: number }
  /** `contractRun` threw: a `TypeError` for invalid options, or what `onSpawn` threw. */
  | { ev: 'error'; id: number; message: string; type: 'TypeError' | 'Error' }
  | { ev: 'fired'; fence: string; lateMs: number; killed: number }
  | { ev: 'watchdog'; reason: string };

/** Calls `onLine` for each complete line of a stream of text chunks. */
export function lineReader(onLine: (line: string) => void): (chunk: string) => void {
  let pending = '';
  return (chunk) => {
    pending += chunk;
    for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      if (line !== '') onLine(line);
    }
  };
}
