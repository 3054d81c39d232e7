import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Now on CLOCK_MONOTONIC, in ms: the clock the watchdog process compares deadlines with. */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint() / 1_000_000n);
}

/** What to kill when a launch's deadline passes: its uid's processes, its launcher's group. */
export interface WatchdogTarget {
  uid?: number | undefined;
  pgid?: number | undefined;
}

export interface WatchdogFiring {
  id: string;
  lateMs: number;
  killed: number;
}

const SCRIPT = fileURLToPath(new URL('./watchdog-process.mjs', import.meta.url));

/**
 * The worker's side of the self-fencing watchdog (`watchdog-process.mjs`): a process of its own,
 * in its own process group, that kills a launch once its deadline passes without a `beat`. The
 * worker arms a launch before spawning it and moves the deadline after every renewal of its
 * lease, so a worker that cannot renew (frozen, starved, cut off from Redis) loses its children
 * before the lease runs out. If the watchdog process dies it is started again and re-armed.
 */
export class Watchdog {
  #process: ChildProcess | undefined;
  readonly #armed = new Map<string, { deadline: number } & WatchdogTarget>();
  #closed = false;

  /**
   * `beatsFd`: a pipe of this process whose writer (the worker, when this runs in its spawner)
   * sends `beat` lines to the watchdog directly, so no event loop but the watchdog's sits between
   * a renewal and its deadline; its EOF (that writer died) kills every armed launch too.
   */
  constructor(
    private readonly onFired: (firing: WatchdogFiring) => void = () => undefined,
    private readonly onRestart: (reason: string) => void = () => undefined,
    private readonly beatsFd?: number,
  ) {
    this.#start();
  }

  arm(id: string, deadline: number, target: WatchdogTarget): void {
    this.#armed.set(id, { deadline, ...target });
    this.#send({ op: 'arm', id, deadline, ...(target.uid === undefined ? {} : { uid: target.uid }) });
    if (target.pgid !== undefined) this.#send({ op: 'target', id, pgid: target.pgid });
  }

  /** The launch's launcher leads process group `pgid` (known once it is spawned). */
  target(id: string, pgid: number): void {
    const entry = this.#armed.get(id);
    if (!entry) return;
    entry.pgid = pgid;
    this.#send({ op: 'target', id, pgid });
  }

  beat(id: string, deadline: number): void {
    const entry = this.#armed.get(id);
    if (!entry || deadline <= entry.deadline) return;
    entry.deadline = deadline;
    this.#send({ op: 'beat', id, deadline });
  }

  disarm(id: string): void {
    if (this.#armed.delete(id)) this.#send({ op: 'disarm', id });
  }

  /** Stops the watchdog; launches still armed are killed by it on the way out. */
  async close(): Promise<void> {
    this.#closed = true;
    const proc = this.#process;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.ref(); // waited for now
    proc.stdin?.end();
    await exited;
  }

  #start(): void {
    // No environment: it needs none, and so holds none of the worker's settings or secrets.
    const proc = spawn(process.execPath, [SCRIPT], {
      stdio: ['pipe', 'pipe', 'inherit', ...(this.beatsFd === undefined ? [] : [this.beatsFd])],
      detached: true,
      env: {},
    });
    this.#process = proc;
    proc.stdin?.on('error', () => undefined);
    let pending = '';
    proc.stdout?.setEncoding('utf8');
    proc.stdout?.on('data', (chunk: string) => {
      pending += chunk;
      for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        try {
          const fired = JSON.parse(line) as { fired: string; late_ms: number; killed: number };
          this.#armed.delete(fired.fired);
          this.onFired({ id: fired.fired, lateMs: fired.late_ms, killed: fired.killed });
        } catch {}
      }
    });
    proc.once('exit', (code, signal) => {
      if (this.#closed) return;
      this.onRestart(`the watchdog exited (${signal ?? code}); starting another`);
      this.#start();
      for (const [id, entry] of this.#armed) this.arm(id, entry.deadline, entry);
    });
    // It must not keep a closing worker alive, nor be what keeps the event loop running.
    proc.unref();
    (proc.stdout as unknown as { unref?: () => void } | null)?.unref?.();
  }

  #send(message: Record<string, unknown>): void {
    this.#process?.stdin?.write(`${JSON.stringify(message)}\n`);
  }
}
