import { constants } from 'node:os';

/** Sends `signal` to every process of the group led by `pgid`; false when the group is gone. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  // Teardown usually finds the group gone (ESRCH). The error is discarded, so skip capturing its
  // stack: under load that capture was a measurable part of a launch's CPU.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** An exit status as a number: the code, or 128 + the signal number for a signal death. */
export function exitStatus(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  const number = signal === null ? undefined : constants.signals[signal];
  return 128 + (number ?? 0);
}
