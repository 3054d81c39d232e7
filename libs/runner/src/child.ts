import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { TEXTS } from '@libos/contract';
import { atExit } from './exit-cleanup.js';
import type { ConfinedSpawn, Confinement, LaunchSpec } from './options.js';
import { exitStatus, signalGroup } from './process-group.js';

/** How long teardown waits for a SIGKILLed child to be reaped, so no process outlives the run. */
const REAP_WAIT_MS = 2_000;

export type StderrMode = 'inherit' | 'ignore' | ((chunk: Uint8Array) => void);

export type SpawnOutcome = { ok: true; child: SupervisedChild } | { ok: false; failure: string };

/**
 * One child process as the runner sees it: its stdin and stdout pipes (stdout drained unread),
 * its exit status, the first stream failure, and the teardown of its whole process group.
 */
export class SupervisedChild {
  /** Resolves with the exit status (128 + n for a death by signal n). */
  readonly exit: Promise<number>;
  /** Resolves at stdout EOF (or when the pipe closes). */
  readonly stdoutEnded: Promise<void>;
  /** Resolves on the first stream failure while streams are watched; see `streamFailure`. */
  readonly failed: Promise<void>;
  streamFailure: string | undefined;
  #exited = false;
  #watchStreams = true;
  #onFailure: () => void = () => undefined;
  readonly #dropExitCleanup: () => void;

  private constructor(
    private readonly proc: ChildProcess,
    readonly pid: number,
    private readonly stdin: Writable,
    private readonly stdout: Readable,
    private readonly confinement: Confinement | undefined,
    stdoutTap: ((chunk: Uint8Array) => void) | undefined,
  ) {
    this.#dropExitCleanup = atExit(() => this.signalGroup('SIGKILL'));
    this.exit = new Promise((resolve) => {
      proc.once('exit', (code, signal) => {
        this.#exited = true;
        resolve(exitStatus(code, signal));
      });
    });
    stdout.resume(); // drained unread, never buffered
    // A copy for humans (the worker's log store), never parsed here; a throwing tap changes nothing.
    if (stdoutTap) stdout.on('data', (chunk: Uint8Array) => ignoreThrow(stdoutTap, chunk));
    this.stdoutEnded = new Promise((resolve) => {
      stdout.once('end', resolve);
      stdout.once('close', resolve);
    });
    this.failed = new Promise((resolve) => {
      this.#onFailure = resolve;
    });
    const fail = (error: Error) => this.#fail(error);
    stdin.on('error', fail); // EPIPE from a child that exits unread must never crash the runner
    stdout.on('error', fail);
  }

  /**
   * Spawns without a shell, stdin and stdout piped, detached so the child leads its own process
   * group. node:child_process directly rather than execa: the runner uses none of execa's
   * features, and execa's per-launch work cost 15–20 % of a trivial launch (bench/runner.ts).
   * With a confinement, its launcher is spawned instead (as its uid), and with a handshake the
   * child is placed and released before this resolves.
   */
  static async spawn(
    spec: LaunchSpec,
    argv: string[],
    stderr: StderrMode,
    confined?: { confinement: Confinement; launch: ConfinedSpawn },
    stdoutTap?: (chunk: Uint8Array) => void,
  ): Promise<SpawnOutcome> {
    const launch = confined?.launch;
    const handshake = launch?.handshake === true;
    let proc: ChildProcess;
    try {
      proc = spawn(launch?.command ?? spec.command, launch?.args ?? argv, {
        cwd: launch ? launch.cwd : spec.cwd,
        env:
          spec.extraEnv === undefined
            ? (spec.env ?? process.env)
            : { ...(spec.env ?? process.env), ...spec.extraEnv },
        stdio: [
          'pipe',
          'pipe',
          typeof stderr === 'function' ? 'pipe' : stderr,
          ...(handshake ? (['pipe', 'pipe'] as const) : []),
          ...(launch?.fds ?? []),
        ],
        detached: true,
        ...(launch?.uid === undefined ? {} : { uid: launch.uid }),
        ...(launch?.gid === undefined ? {} : { gid: launch.gid }),
      });
    } catch (error) {
      return {
        ok: false,
        failure: TEXTS.spawnFailed(error instanceof Error ? error.message : String(error)),
      };
    } finally {
      // the launcher has its own copies (or failed to start): ours are not needed
      for (const fd of launch?.fds ?? []) closeQuietly(fd);
    }
    // A failed spawn has no pid and reports its error asynchronously. Later 'error' events are
    // not expected (signals go through process.kill) and must not crash the caller either.
    const spawnError = new Promise<Error>((resolve) => proc.once('error', resolve));
    proc.on('error', () => undefined);
    const { pid, stdin, stdout } = proc;
    if (pid === undefined) return { ok: false, failure: TEXTS.spawnFailed((await spawnError).message) };
    if (stdin === null || stdout === null) {
      signalGroup(pid, 'SIGKILL');
      return { ok: false, failure: TEXTS.pipesUnavailable('no stdin or stdout pipe') };
    }
    if (typeof stderr === 'function') proc.stderr?.on('data', stderr);
    const child = new SupervisedChild(proc, pid, stdin, stdout, confined?.confinement, stdoutTap);
    if (handshake && confined) {
      const [report, release] = [proc.stdio[3], proc.stdio[4]];
      try {
        if (!isReadable(report) || !isWritable(release)) throw new Error('no handshake pipes');
        await confined.confinement.started(pid, report, release);
      } catch (error) {
        await child.tearDown();
        return {
          ok: false,
          failure: TEXTS.spawnFailed(error instanceof Error ? error.message : String(error)),
        };
      }
    }
    return { ok: true, child };
  }

  get exited(): boolean {
    return this.#exited;
  }

  /** Writes the request; resolves once it is flushed to the pipe (never on failure). */
  write(line: string): Promise<void> {
    return new Promise((resolve) => {
      this.stdin.write(line, (error) => (error ? this.#fail(error) : resolve()));
    });
  }

  /** Stream failures count only while the request is written and stdout drained. */
  stopWatchingStreams(): void {
    this.#watchStreams = false;
  }

  /** EOF on the child's stdin, the graceful cancel; also drops a request still unwritten. */
  closeStdin(): void {
    this.stdin.destroy();
  }

  /** Signals the child's whole group, and with a confinement every process of the launch. */
  signalGroup(signal: NodeJS.Signals): boolean {
    if (this.confinement && (signal === 'SIGSTOP' || signal === 'SIGCONT' || signal === 'SIGKILL')) {
      this.confinement.signal(signal);
    }
    return signalGroup(this.pid, signal);
  }

  /** Kills the whole group (grandchildren too), closes the pipes and waits for the reap. */
  async tearDown(): Promise<void> {
    this.signalGroup('SIGKILL');
    this.stdin.destroy();
    this.stdout.destroy();
    this.proc.stderr?.destroy();
    for (const extra of this.proc.stdio.slice(3)) extra?.destroy();
    if (!this.#exited) await Promise.race([this.exit, delay(REAP_WAIT_MS)]);
    this.#dropExitCleanup();
  }

  #fail(error: Error): void {
    if (!this.#watchStreams || this.streamFailure !== undefined) return; // the first one wins
    this.streamFailure = TEXTS.streamFailed(error.message);
    this.#onFailure();
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {}
}

function ignoreThrow(tap: (chunk: Uint8Array) => void, chunk: Uint8Array): void {
  try {
    tap(chunk);
  } catch {}
}

function isReadable(stream: unknown): stream is Readable {
  return stream !== null && typeof stream === 'object' && 'read' in stream;
}

function isWritable(stream: unknown): stream is Writable {
  return stream !== null && typeof stream === 'object' && 'write' in stream;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
