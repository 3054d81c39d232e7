import {
  type ContractRunResult,
  classifyLaunch,
  encodeRequestLine,
  namesResultFile,
  RESULT_FILE_PLACEHOLDER,
  TEXTS,
} from '@libos/contract';
import { SupervisedChild } from './child.js';
import { PausableClock } from './clock.js';
import {
  type ContractRunHooks,
  type ContractRunOptions,
  contractRunOptionsSchema,
  EXIT_WAIT_MS,
  type LaunchControl,
  type LaunchSpec,
} from './options.js';
import { ResultDir } from './result-dir.js';

/** The rejection of an aborted `contractRun`: no terminal, nothing of the child was read. */
export class ContractRunAbortedError extends Error {
  override name = 'AbortError';
  constructor(cause: unknown) {
    super('the contract run was aborted', { cause });
  }
}

/**
 * Runs one child under the contract (reference §1.3–§1.12): argv check, private result dir,
 * one request line on stdin, stdout drained unread, wall deadline, stdin EOF as cancel, grace,
 * exit-status wait, teardown of the child's whole process group, then the result file's
 * classification. Resolves with a terminal for every ending; rejects only when `signal` aborts
 * (with a `ContractRunAbortedError`) or the options are invalid (a `TypeError`).
 */
export async function contractRun(options: ContractRunOptions): Promise<ContractRunResult> {
  const { signal, onSpawn, stderr, stdout, logger, confinement, ...data } = options;
  const parsed = contractRunOptionsSchema.safeParse(data);
  if (!parsed.success) throw new TypeError(`contractRun: invalid options: ${parsed.error.message}`);
  const spec = parsed.data;
  if (!namesResultFile(spec.args)) {
    return classifyLaunch({ launched: false, failure: TEXTS.argvLacksPlaceholder });
  }
  if (signal?.aborted) throw new ContractRunAbortedError(signal.reason);

  let dir: ResultDir;
  try {
    dir = ResultDir.create(spec.resultParent);
  } catch (error) {
    // The preferred place gone or full (a tmpfs): the temp dir, as without one.
    try {
      if (spec.resultParent === undefined) throw error;
      dir = ResultDir.create();
    } catch {
      return classifyLaunch({ launched: false, failure: TEXTS.noDirectory(messageOf(error)) });
    }
  }
  try {
    if (signal?.aborted) throw new ContractRunAbortedError(signal.reason);
    return await runInDir(spec, dir, { signal, onSpawn, stderr, stdout, logger, confinement });
  } finally {
    dir.remove();
    // The teardown has killed what was left; waiting for the sandbox to be empty before its uid
    // goes back (about one launch in ten, a millisecond or two) need not hold the result.
    void confinement?.release();
  }
}

const ABORTED = Symbol('aborted');

async function runInDir(
  spec: LaunchSpec,
  dir: ResultDir,
  hooks: ContractRunHooks,
): Promise<ContractRunResult> {
  const { signal, logger } = hooks;
  const argv = spec.args.map((arg) => arg.replaceAll(RESULT_FILE_PLACEHOLDER, dir.resultPath));
  const line = encodeRequestLine({
    request_id: spec.id,
    kind: spec.kind,
    input: spec.input,
    limits: spec.maxSteps === undefined ? undefined : { max_steps: spec.maxSteps },
    schema: spec.schema,
  });
  let confined: Parameters<typeof SupervisedChild.spawn>[3];
  if (hooks.confinement) {
    try {
      const env =
        spec.extraEnv === undefined
          ? (spec.env ?? process.env)
          : { ...(spec.env ?? process.env), ...spec.extraEnv };
      const launch = await hooks.confinement.spawn(
        { command: spec.command, args: argv, cwd: spec.cwd, env },
        dir.path,
      );
      confined = { confinement: hooks.confinement, launch };
    } catch (error) {
      return classifyLaunch({ launched: false, failure: TEXTS.spawnFailed(messageOf(error)) });
    }
  }
  const spawned = await SupervisedChild.spawn(spec, argv, hooks.stderr ?? 'inherit', confined, hooks.stdout);
  if (!spawned.ok) return classifyLaunch({ launched: false, failure: spawned.failure });
  const child = spawned.child;
  const { pid } = child;
  logger?.debug({ pid, command: spec.command, requestId: spec.id }, 'child spawned');

  let onAbort: () => void = () => undefined;
  const aborted = new Promise<typeof ABORTED>((resolve) => {
    onAbort = () => resolve(ABORTED);
  });
  signal?.addEventListener('abort', onAbort, { once: true });

  let onCancel: () => void = () => undefined;
  const cancelled = new Promise<'cancel'>((resolve) => {
    onCancel = () => resolve('cancel');
  });

  const clock = new PausableClock();
  let live = true;
  const control: LaunchControl = {
    pid,
    get paused() {
      return clock.paused;
    },
    pause() {
      if (!live || clock.paused) return;
      child.signalGroup('SIGSTOP');
      clock.pause();
    },
    resume() {
      if (!live || !clock.paused) return;
      child.signalGroup('SIGCONT');
      clock.resume();
    },
    cancel() {
      if (!live) return;
      child.stopWatchingStreams(); // a request cut short by the EOF is not a stream failure
      onCancel();
      child.closeStdin();
    },
    signal: (sig) => live && child.signalGroup(sig),
  };

  let timedOut = false;
  let exitCode: number | undefined;
  let wasAborted = false;
  try {
    hooks.onSpawn?.(control);
    // The deadline covers writing the request and draining stdout to EOF (reference §1.8).
    const deadline = clock.wait(spec.deadlineMs);
    const first = await Promise.race([
      Promise.all([child.write(line), child.stdoutEnded]).then(() => 'eof' as const),
      deadline.done.then(() => 'deadline' as const),
      child.failed.then(() => 'failed' as const),
      cancelled,
      aborted,
    ]);
    deadline.cancel();
    child.stopWatchingStreams();

    let settled: number | undefined | typeof ABORTED;
    if (first === ABORTED) {
      settled = ABORTED;
    } else if (first === 'eof') {
      // No timer when the exit is already known; clock.stop() at teardown clears the others.
      settled = child.exited
        ? await child.exit
        : await Promise.race([child.exit, clock.wait(EXIT_WAIT_MS).done.then(() => undefined), aborted]);
    } else if (first === 'deadline' || first === 'cancel') {
      timedOut = first === 'deadline';
      logger?.debug({ pid, requestId: spec.id }, `${first}: closing stdin`);
      child.closeStdin();
      // One window bounds the flush and the exit wait together.
      const grace = clock.wait(spec.cancelGraceMs);
      settled = await Promise.race([
        child.stdoutEnded.then(() => child.exit),
        grace.done.then(() => undefined),
        aborted,
      ]);
    }
    // After a stream failure the exit status is not collected (reference §1.8 step 4).
    if (settled === ABORTED) wasAborted = true;
    else if (first !== 'failed') exitCode = settled;
  } finally {
    live = false;
    clock.stop();
    signal?.removeEventListener('abort', onAbort);
    await child.tearDown();
    logger?.debug({ pid, requestId: spec.id, timedOut, exitCode }, 'child torn down');
  }
  // External cancellation is never a terminal: the result file is not read.
  if (wasAborted) throw new ContractRunAbortedError(signal?.reason);

  return classifyLaunch({
    launched: true,
    requestId: spec.id,
    timedOut,
    ...(child.streamFailure === undefined ? {} : { runnerFailure: child.streamFailure }),
    file: dir.readResult(spec.maxResultBytes),
    ...(exitCode === undefined ? {} : { exitCode }),
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
