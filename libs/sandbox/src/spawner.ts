import { type ChildProcess, spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { type ContractRunResult, classifyLaunch } from '@libos/contract';
import { ContractRunAbortedError, type ContractRunOptions, type LaunchControl } from '@libos/runner';
import type { ConfineRequest, IsolationReport, SandboxSettings } from './sandbox.js';
import { lineReader, type SpawnerEvent, type SpawnerRequest } from './spawner-protocol.js';
import type { WatchdogFiring } from './watchdog.js';

/** One launch through the spawner: `contractRun`'s options, with the sandbox's policy as data. */
export type SpawnerRunOptions = Omit<ContractRunOptions, 'confinement'> & {
  /** A copy of the child's stdout bytes (the runner's stdout tap, relayed). */
  stdout?: ((chunk: Uint8Array) => void) | undefined;
  /** The sandbox's policy for this child; none: unconfined (isolation none). */
  confine?: ConfineRequest | undefined;
  /** The watchdog's first deadline (CLOCK_MONOTONIC ms) for this launch, armed before the spawn. */
  fence?: { id: string; deadline: number } | undefined;
};

export interface SpawnerHandlers {
  /** The watchdog killed a launch whose deadline passed without a beat. */
  onFired?: (firing: WatchdogFiring) => void;
  /** The spawner or its watchdog died and was started again (launches in flight failed). */
  onRestart?: (reason: string) => void;
}

interface Pending {
  options: SpawnerRunOptions;
  resolve: (result: ContractRunResult) => void;
  reject: (error: unknown) => void;
  control: RemoteControl | undefined;
}

const SCRIPT = new URL(`./spawner-process.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url);

/**
 * The worker's side of its spawner (`spawner-process.ts`): a small, long-lived process of its own
 * that runs every launch (the runner, the sandbox with its uids and cgroups, the watchdog), so
 * the worker's event loop never blocks on a fork. `run` has `contractRun`'s contract: it resolves
 * for every ending of the child, rejects with a `ContractRunAbortedError` when `signal` aborts,
 * and the `LaunchControl` given to `onSpawn` pauses, resumes, cancels and signals the child there.
 * A spawner that dies takes its children with it (bwrap's `--die-with-parent`, its watchdog's
 * EOF); their launches resolve `failed` and another spawner is started.
 */
export class Spawner {
  #proc!: ChildProcess;
  #beats: Writable | undefined;
  #ready!: Promise<void>;
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();
  #closed = false;
  #report!: IsolationReport;
  #describe = '';
  /** The spawner's temp dir (where its result directories go). */
  #tmpdir = '';
  /** This process's temp dir, and the variables it was read from (see `#ownTmpdir`). */
  #own = { env: '', tmpdir: '' };

  private constructor(
    private readonly settings: SandboxSettings,
    private readonly env: Readonly<Record<string, string | undefined>>,
    private readonly handlers: SpawnerHandlers,
  ) {}

  /**
   * Starts the spawner and waits until it has probed the host. Rejects with its message when
   * `strict` cannot be enforced. Of `env` the spawner gets only `PATH` and the temp dir variables:
   * it holds none of the worker's settings or secrets (each child's environment comes with its
   * launch).
   */
  static async start(
    settings: SandboxSettings,
    env: Readonly<Record<string, string | undefined>>,
    handlers: SpawnerHandlers = {},
  ): Promise<Spawner> {
    const spawner = new Spawner(settings, env, handlers);
    spawner.#start();
    await spawner.#ready;
    return spawner;
  }

  get report(): IsolationReport {
    return this.#report;
  }

  /** The spawner's OS pid (for measurements and tests). */
  get pid(): number | undefined {
    return this.#proc.pid;
  }

  describe(): string {
    return this.#describe;
  }

  /** `contractRun` in the spawner; see the class. */
  async run(options: SpawnerRunOptions): Promise<ContractRunResult> {
    const { signal } = options;
    if (signal?.aborted) throw new ContractRunAbortedError(signal.reason);
    await this.#ready;
    const id = this.#nextId++;
    return new Promise<ContractRunResult>((resolve, reject) => {
      const onAbort = () => this.#send({ op: 'abort', id });
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = () => signal?.removeEventListener('abort', onAbort);
      this.#pending.set(id, {
        options,
        resolve: (result) => {
          done();
          resolve(result);
        },
        reject: (error) => {
          done();
          reject(error);
        },
        control: undefined,
      });
      const {
        stderr,
        stdout,
        logger,
        confine,
        fence,
        onSpawn: _onSpawn,
        signal: _signal,
        ...launch
      } = options;
      this.#send({
        op: 'run',
        id,
        // The runner's default environment is its process's: the caller's, not the spawner's.
        launch: launch.env === undefined ? { ...launch, env: process.env } : launch,
        ...(confine ? { confine } : {}),
        ...(fence ? { fence } : {}),
        stderr: typeof stderr === 'function' ? 'tap' : (stderr ?? 'inherit'),
        stdout: stdout !== undefined,
        log: logger !== undefined,
        // The runner's result directories follow its TMPDIR: the caller's, if it changed since.
        ...(this.#ownTmpdir() === this.#tmpdir ? {} : { tmpdir: this.#ownTmpdir() }),
      });
    });
  }

  /**
   * os.tmpdir(), read again only when TMPDIR, TMP or TEMP changed: it reads them through Node's
   * secure getenv, five system calls (uids, capabilities) each, which was ~15 a launch.
   */
  #ownTmpdir(): string {
    const env = `${process.env.TMPDIR}\0${process.env.TMP}\0${process.env.TEMP}`;
    if (env !== this.#own.env) this.#own = { env, tmpdir: tmpdir() };
    return this.#own.tmpdir;
  }

  /**
   * The launch's lease was renewed: its watchdog deadline moves to `deadline` (only ever later).
   * Written to the watchdog directly (fd 3 of the spawner, handed on to it), so a spawner whose
   * event loop is busy forking cannot hold a renewal back; and to the spawner, which re-arms a
   * restarted watchdog with it.
   */
  beat(fence: string, deadline: number): void {
    this.#beats?.write(`${JSON.stringify({ op: 'beat', id: fence, deadline })}\n`);
    this.#send({ op: 'beat', fence, deadline });
  }

  /** Ends the spawner: launches still running are killed (close only once they are done). */
  async close(): Promise<void> {
    this.#closed = true;
    const proc = this.#proc;
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.stdin?.end();
    this.#beats?.end();
    await exited;
  }

  #start(): void {
    // From source (tests, development) through tsx, as the worker itself runs; built: plain node.
    const execArgv = import.meta.url.endsWith('.ts')
      ? ['--import', import.meta.resolve('tsx'), '--conditions=@libos/source']
      : [];
    // A small heap: the spawner holds launches in flight, nothing more, and a small process is
    // cheaper to fork for each child.
    const proc = spawn(
      process.execPath,
      [...execArgv, '--max-semi-space-size=2', fileURLToPath(SCRIPT), JSON.stringify(this.settings)],
      { stdio: ['pipe', 'pipe', 'inherit', 'pipe'], detached: true, env: spawnerEnvironment(this.env) },
    );
    this.#proc = proc;
    proc.stdin?.on('error', () => undefined);
    const beats = proc.stdio[3];
    this.#beats = beats && 'write' in beats ? beats : undefined;
    this.#beats?.on('error', () => undefined);
    let onReady: () => void = () => undefined;
    let onFatal: (error: Error) => void = () => undefined;
    this.#ready = new Promise<void>((resolve, reject) => {
      onReady = resolve;
      onFatal = reject;
    });
    this.#ready.catch(() => undefined);
    proc.stdout?.setEncoding('utf8');
    proc.stdout?.on(
      'data',
      lineReader((line) => {
        let event: SpawnerEvent;
        try {
          event = JSON.parse(line) as SpawnerEvent;
        } catch {
          return;
        }
        if (event.ev === 'ready') {
          this.#report = event.report;
          this.#describe = event.describe;
          this.#tmpdir = event.tmpdir;
          onReady();
        } else if (event.ev === 'fatal') onFatal(new Error(event.message));
        else this.#event(event);
      }),
    );
    proc.once('exit', (code, signal) => {
      onFatal(new Error(`the spawner exited (${signal ?? code}) before it was ready`));
      const failure = `the worker's spawner exited (${signal ?? code}) while the child ran`;
      for (const [id, pending] of this.#pending) {
        this.#pending.delete(id);
        pending.control?.end();
        pending.resolve(classifyLaunch({ launched: false, failure }));
      }
      if (this.#closed) return;
      this.handlers.onRestart?.(`the spawner exited (${signal ?? code}); starting another`);
      this.#start();
    });
  }

  #event(event: Exclude<SpawnerEvent, { ev: 'ready' | 'fatal' }>): void {
    if (event.ev === 'fired') {
      this.handlers.onFired?.({ id: event.fence, lateMs: event.lateMs, killed: event.killed });
      return;
    }
    if (event.ev === 'watchdog') {
      this.handlers.onRestart?.(event.reason);
      return;
    }
    const pending = this.#pending.get(event.id);
    if (!pending) return;
    switch (event.ev) {
      case 'spawned': {
        pending.control = new RemoteControl(event.pid, event.id, (request) => this.#send(request));
        pending.options.onSpawn?.(pending.control);
        return;
      }
      case 'stderr': {
        const { stderr } = pending.options;
        if (typeof stderr === 'function') stderr(Buffer.from(event.data, 'base64'));
        return;
      }
      case 'stdout': {
        try {
          pending.options.stdout?.(Buffer.from(event.data, 'base64'));
        } catch {} // as the runner's own tap: a throw is ignored
        return;
      }
      case 'log':
        pending.options.logger?.debug(event.fields, event.message);
        return;
      case 'done': {
        this.#pending.delete(event.id);
        pending.control?.end();
        const { result } = event;
        // JSON drops a property whose value is undefined; `report` is an own property of every
        // captured result.
        if (result.terminal.type === 'captured' && !('report' in result)) result.report = undefined;
        pending.resolve(result);
        return;
      }
      case 'aborted':
        this.#pending.delete(event.id);
        pending.control?.end();
        pending.reject(new ContractRunAbortedError(pending.options.signal?.reason));
        return;
      case 'error':
        this.#pending.delete(event.id);
        pending.control?.end();
        pending.reject(event.type === 'TypeError' ? new TypeError(event.message) : new Error(event.message));
        return;
    }
  }

  #send(request: SpawnerRequest): void {
    this.#proc.stdin?.write(`${JSON.stringify(request)}\n`);
  }
}

/** The running child as the worker sees it: each call is a message to the spawner. */
class RemoteControl implements LaunchControl {
  #paused = false;
  #live = true;

  constructor(
    readonly pid: number,
    private readonly id: number,
    private readonly send: (request: SpawnerRequest) => void,
  ) {}

  get paused(): boolean {
    return this.#paused;
  }

  pause(): void {
    if (!this.#live || this.#paused) return;
    this.#paused = true;
    this.send({ op: 'pause', id: this.id });
  }

  resume(): void {
    if (!this.#live || !this.#paused) return;
    this.#paused = false;
    this.send({ op: 'resume', id: this.id });
  }

  cancel(): void {
    if (this.#live) this.send({ op: 'cancel', id: this.id });
  }

  /** Sent to the spawner, which signals the group; true while the launch runs. */
  signal(signal: NodeJS.Signals): boolean {
    if (this.#live) this.send({ op: 'signal', id: this.id, signal });
    return this.#live;
  }

  /** The run is over: the control is inert. */
  end(): void {
    this.#live = false;
  }
}

/** What the spawner's own environment keeps: where programs and temp files are. */
function spawnerEnvironment(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of ['PATH', 'TMPDIR', 'TMP', 'TEMP']) {
    const value = env[name];
    if (value !== undefined) kept[name] = value;
  }
  return kept;
}
