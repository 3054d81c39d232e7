import { spawn } from 'node:child_process';
import { closeSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { TEXTS } from '@libos/contract';
import { atExit } from './exit-cleanup.js';
import type { ConfinedSpawn, Confinement, LaunchSpec } from './options.js';
import { type Launched, type PosixSpawnRequest, posixSpawn, posixSpawnAvailable } from './posix-spawn.js';
import { exitStatus, signalGroup } from './process-group.js';

/** How long teardown waits for a SIGKILLed child to be reaped, so no process outlives the run. */
const REAP_WAIT_MS = 2_000;
/** How long teardown waits for the rest of a dead child's stderr. */
const STDERR_DRAIN_MS = 250;

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
  readonly pid: number;
  #exited = false;
  #watchStreams = true;
  #onFailure: () => void = () => undefined;
  readonly #stderrEnded: Promise<void>;
  readonly #dropExitCleanup: () => void;

  private constructor(
    private readonly launched: Launched,
    private readonly confinement: Confinement | undefined,
    stdoutTap: ((chunk: Uint8Array) => void) | undefined,
  ) {
    const { pid, stdin, stdout, stderr } = launched;
    this.pid = pid;
    this.#dropExitCleanup = atExit(() => this.signalGroup('SIGKILL'));
    this.exit = launched.exit.then((status) => {
      this.#exited = true;
      return status;
    });
    stdout.resume(); // drained unread, never buffered
    // A copy for humans (the worker's log store), never parsed here; a throwing tap changes nothing.
    if (stdoutTap) stdout.on('data', (chunk: Uint8Array) => ignoreThrow(stdoutTap, chunk));
    this.stdoutEnded = ended(stdout);
    this.#stderrEnded = stderr ? ended(stderr) : Promise.resolve();
    this.failed = new Promise((resolve) => {
      this.#onFailure = resolve;
    });
    const fail = (error: Error) => this.#fail(error);
    stdin.on('error', fail); // EPIPE from a child that exits unread must never crash the runner
    stdout.on('error', fail);
  }

  /**
   * Spawns without a shell, stdin and stdout piped, as the leader of a session (and so a process
   * group) of its own: through posix_spawn where it is available (`posix-spawn.ts`: no fork of
   * this process), else node:child_process. Not execa: the runner uses none of its features, and
   * its per-launch work cost 15–20 % of a trivial launch (bench/runner.ts). With a confinement,
   * its launcher is spawned instead (as its uid, through node:child_process), and with a
   * handshake the child is placed and released before this resolves.
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
    const request: PosixSpawnRequest = {
      command: launch?.command ?? spec.command,
      args: launch?.args ?? argv,
      cwd: launch ? launch.cwd : spec.cwd,
      env:
        spec.extraEnv === undefined
          ? (spec.env ?? process.env)
          : { ...(spec.env ?? process.env), ...spec.extraEnv },
      stderr: typeof stderr === 'function' ? 'pipe' : stderr,
      extraPipes: handshake ? ['read', 'write'] : [],
      fds: launch?.fds ?? [],
    };
    let launched: Launched | string;
    try {
      const asOther = launch?.uid !== undefined || launch?.gid !== undefined;
      launched =
        !asOther && posixSpawnAvailable() ? await posixSpawn(request) : await nodeSpawn(request, launch);
    } catch (error) {
      return {
        ok: false,
        failure: TEXTS.spawnFailed(error instanceof Error ? error.message : String(error)),
      };
    } finally {
      // the launcher has its own copies (or failed to start): ours are not needed
      for (const fd of request.fds) closeQuietly(fd);
    }
    if (typeof launched === 'string') return { ok: false, failure: launched };
    if (typeof stderr === 'function') launched.stderr?.on('data', stderr);
    launched.stderr?.on('error', () => undefined); // a log tap's pipe failing is not the launch's
    const child = new SupervisedChild(launched, confined?.confinement, stdoutTap);
    if (handshake && confined) {
      const [report, release] = launched.extra;
      try {
        if (!isReadable(report) || !isWritable(release)) throw new Error('no handshake pipes');
        await confined.confinement.started(child.pid, report, release);
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
      this.launched.stdin.write(line, (error) => (error ? this.#fail(error) : resolve()));
    });
  }

  /** Stream failures count only while the request is written and stdout drained. */
  stopWatchingStreams(): void {
    this.#watchStreams = false;
  }

  /** EOF on the child's stdin, the graceful cancel; also drops a request still unwritten. */
  closeStdin(): void {
    this.launched.stdin.destroy();
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
    const { stdin, stdout, stderr, extra } = this.launched;
    stdin.destroy();
    stdout.destroy();
    for (const stream of extra) stream.destroy();
    if (!this.#exited) await Promise.race([this.exit, delay(REAP_WAIT_MS)]);
    // The exit can be reported before the last stderr bytes are read: the group is dead now, so
    // its end follows at once (a process that left the group could hold it, hence the bound).
    if (stderr && !stderr.destroyed) await Promise.race([this.#stderrEnded, delay(STDERR_DRAIN_MS)]);
    stderr?.destroy();
    this.#dropExitCleanup();
  }

  #fail(error: Error): void {
    if (!this.#watchStreams || this.streamFailure !== undefined) return; // the first one wins
    this.streamFailure = TEXTS.streamFailed(error.message);
    this.#onFailure();
  }
}

/**
 * node:child_process, for a launcher that runs as another user (posix_spawn has no setuid) or
 * where posix_spawn is not available. Resolves with the launch or a failure message.
 */
async function nodeSpawn(
  request: PosixSpawnRequest,
  ids: { uid?: number; gid?: number } | undefined,
): Promise<Launched | string> {
  const proc = spawn(request.command, request.args, {
    cwd: request.cwd,
    env: request.env,
    stdio: ['pipe', 'pipe', request.stderr, ...request.extraPipes.map(() => 'pipe' as const), ...request.fds],
    detached: true,
    ...(ids?.uid === undefined ? {} : { uid: ids.uid }),
    ...(ids?.gid === undefined ? {} : { gid: ids.gid }),
  });
  // A failed spawn has no pid and reports its error asynchronously. Later 'error' events are
  // not expected (signals go through process.kill) and must not crash the caller either.
  const spawnError = new Promise<Error>((resolve) => proc.once('error', resolve));
  proc.on('error', () => undefined);
  const exit = new Promise<number>((resolve) => {
    proc.once('exit', (code, signal) => resolve(exitStatus(code, signal)));
  });
  const { pid, stdin, stdout, stderr, stdio } = proc;
  if (pid === undefined) return TEXTS.spawnFailed((await spawnError).message);
  if (stdin === null || stdout === null) {
    signalGroup(pid, 'SIGKILL');
    return TEXTS.pipesUnavailable('no stdin or stdout pipe');
  }
  const extra = stdio.slice(3, 3 + request.extraPipes.length).filter((s) => s !== null && s !== undefined);
  return { pid, stdin, stdout, stderr: stderr ?? undefined, extra, exit };
}

function ended(stream: Readable): Promise<void> {
  return new Promise((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
  });
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
