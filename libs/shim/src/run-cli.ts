import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import { textOf } from './text.js';

/** What the observer decides after each CLI stdout line. */
export type Verdict = 'continue' | 'stop';

/**
 * How a CLI run ended, from the shim's side. `cancelled`: the parent closed the shim's stdin.
 * `stopped`: the observer said `stop` (a step ceiling). `failed`: the run never got going or
 * the shim itself broke. `exited`: the CLI ran to its end (`code` is −1 when the exit status did
 * not come within the exit wait; 128 + signal number when a signal ended it).
 */
export type CliEnding =
  | { type: 'exited'; code: number }
  | { type: 'stopped' }
  | { type: 'cancelled' }
  | { type: 'failed'; reason: string };

export interface RunCliOptions {
  command: string;
  args: readonly string[];
  cwd?: string;
  /** The CLI's environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** Gets every stdout line (without its line ending), including late ones during the grace. */
  observe: (line: string) => Verdict;
  /**
   * Gets every stderr line (stderr is still passed on to the shim's own, unchanged, for the
   * child's log). Without it the CLI's stderr is inherited.
   */
  observeStderr?: (line: string) => void;
  /** Graceful cancel: the parent closed the shim's stdin. */
  cancel?: AbortSignal;
  /** Hard abort of `runCli` itself: the CLI is killed and the promise rejects with the reason. */
  abort?: AbortSignal;
  /** Time between the stop signal and the kill, during which lines are still observed. */
  stopGraceMs?: number;
  stopSignal?: NodeJS.Signals;
  /** How long to wait for the exit status after a normal stdout EOF. */
  exitWaitMs?: number;
}

export const STOP_GRACE_MS = 3000;
export const EXIT_WAIT_MS = 2000;

/**
 * Runs an agent CLI the way both shims need (reference §3.1 `run_cli`): its stdin is closed from
 * the start (the prompt rides argv; the shim's own stdin is the parent's cancel channel and
 * never reaches the CLI), stderr is inherited, and every stdout line goes to `observe`.
 * A `stop` verdict or the parent's cancel is graceful: `stopSignal` first (the CLI's Ctrl-C path,
 * on which it flushes), lines still observed for up to `stopGraceMs` so late usage counts, then a
 * kill. The CLI stays in the shim's process group, so a runner killing the shim's group also
 * reaches it. Precedence of the ending: failure, then cancelled, then stopped, then exited.
 */
export function runCli(options: RunCliOptions): Promise<CliEnding> {
  const { command, observe, cancel, abort } = options;
  const stopGraceMs = options.stopGraceMs ?? STOP_GRACE_MS;
  const stopSignal = options.stopSignal ?? 'SIGINT';
  const exitWaitMs = options.exitWaitMs ?? EXIT_WAIT_MS;
  if (abort?.aborted) return Promise.reject(abort.reason);
  // Already cancelled: spawning a CLI only to interrupt it would spend for nothing.
  if (cancel?.aborted) return Promise.resolve({ type: 'cancelled' });

  let child: ChildProcess;
  try {
    child = spawn(command, [...options.args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', options.observeStderr === undefined ? 'inherit' : 'pipe'],
    });
  } catch (error) {
    return Promise.resolve({ type: 'failed', reason: `cannot spawn ${command}: ${textOf(error)}` });
  }
  const stdout = child.stdout;
  const observeStderr = options.observeStderr;
  if (observeStderr !== undefined && child.stderr !== null) {
    const errDecoder = new StringDecoder('utf8');
    let errPending = '';
    const take = (line: string) => {
      try {
        observeStderr(line.endsWith('\r') ? line.slice(0, -1) : line);
      } catch {
        // An observer's bug must not stop the run; stderr is advisory.
      }
    };
    child.stderr.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      // Bounded: a line longer than 64 KiB is observed in pieces.
      errPending += errDecoder.write(chunk);
      let newline = errPending.indexOf('\n');
      while (newline !== -1) {
        take(errPending.slice(0, newline));
        errPending = errPending.slice(newline + 1);
        newline = errPending.indexOf('\n');
      }
      if (errPending.length > 65_536) {
        take(errPending);
        errPending = '';
      }
    });
    child.stderr.once('end', () => {
      errPending += errDecoder.end();
      if (errPending !== '') take(errPending);
    });
    child.stderr.on('error', () => {});
  }
  if (stdout === null) {
    child.kill('SIGKILL');
    return Promise.resolve({ type: 'failed', reason: 'shim pipes unavailable: the CLI has no stdout pipe' });
  }

  return new Promise<CliEnding>((resolve, reject) => {
    let failure: string | undefined;
    let cancelled = false;
    let stopped = false;
    let spawned = false;
    let exitCode: number | undefined;
    let stdoutEnded = false;
    let observing = true;
    let windingDown = false;
    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;
    let exitTimer: NodeJS.Timeout | undefined;
    const decoder = new StringDecoder('utf8');
    let pending = '';

    const running = () => child.exitCode === null && child.signalCode === null;
    const kill = (signal: NodeJS.Signals) => {
      if (!running()) return;
      try {
        child.kill(signal);
      } catch {
        // Already gone: nothing to stop.
      }
    };

    const teardown = () => {
      settled = true;
      observing = false;
      clearTimeout(graceTimer);
      clearTimeout(exitTimer);
      cancel?.removeEventListener('abort', onCancel);
      abort?.removeEventListener('abort', onAbort);
      stdout.removeListener('data', onData);
      stdout.destroy();
      kill('SIGKILL');
    };

    const finish = () => {
      if (settled) return;
      teardown();
      if (failure !== undefined) resolve({ type: 'failed', reason: failure });
      else if (cancelled) resolve({ type: 'cancelled' });
      else if (stopped) resolve({ type: 'stopped' });
      else resolve({ type: 'exited', code: exitCode ?? -1 });
    };

    const fail = (reason: string) => {
      failure ??= reason;
      finish();
    };

    // Graceful: signal now, keep observing through the grace, kill when it ends.
    const windDown = () => {
      if (windingDown || settled) return;
      windingDown = true;
      clearTimeout(exitTimer);
      kill(stopSignal);
      graceTimer = setTimeout(finish, stopGraceMs);
      maybeDone();
    };

    const maybeDone = () => {
      if (settled || !stdoutEnded) return;
      if (exitCode !== undefined) finish();
      else if (!windingDown && exitTimer === undefined) exitTimer = setTimeout(finish, exitWaitMs);
    };

    const deliver = (line: string) => {
      if (!observing) return;
      let verdict: Verdict;
      try {
        verdict = observe(line.endsWith('\r') ? line.slice(0, -1) : line);
      } catch (error) {
        fail(`shim run failed: ${textOf(error)}`);
        return;
      }
      if (verdict === 'stop' && !cancelled && !stopped) {
        stopped = true;
        windDown();
      }
    };

    function onData(chunk: Buffer) {
      pending += decoder.write(chunk);
      let newline = pending.indexOf('\n');
      while (newline !== -1 && !settled) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        deliver(line);
        newline = pending.indexOf('\n');
      }
    }

    function onCancel() {
      if (settled) return;
      cancelled = true;
      windDown();
    }

    function onAbort() {
      if (settled) return;
      teardown();
      reject(abort?.reason);
    }

    stdout.on('data', onData);
    stdout.once('end', () => {
      pending += decoder.end();
      if (pending !== '') deliver(pending);
      pending = '';
      stdoutEnded = true;
      maybeDone();
    });
    stdout.on('error', (error) => fail(`shim run failed: ${textOf(error)}`));
    child.once('spawn', () => {
      spawned = true;
    });
    child.on('error', (error) => {
      fail(spawned ? `shim run failed: ${textOf(error)}` : `cannot spawn ${command}: ${textOf(error)}`);
    });
    child.once('exit', (code, signal) => {
      exitCode = code ?? 128 + (signal === null ? 0 : (constants.signals[signal] ?? 0));
      maybeDone();
    });
    cancel?.addEventListener('abort', onCancel, { once: true });
    abort?.addEventListener('abort', onAbort, { once: true });
  });
}
