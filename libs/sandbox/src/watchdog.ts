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

/** Whether the watchdog could kill anything of a launch: it has been told its uid or its group. */
const killable = (target: WatchdogTarget) => target.uid !== undefined || target.pgid !== undefined;

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
  /** Lines of this turn of the event loop, written together (see `#send`). */
  #queued: string[] = [];
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

  /**
   * Kill `id`'s processes once `deadline` passes without a beat. With a uid it is written at once
   * (with what is queued before it), so the child is armed before it is spawned. Without a uid or
   * a group the watchdog could kill nothing of it: it is sent with its group, by `target`, also at
   * once.
   */
  arm(id: string, deadline: number, target: WatchdogTarget): void {
    const entry = { deadline, ...target };
    this.#armed.set(id, entry);
    if (killable(entry)) this.#sendArm(id, entry);
  }

  /** The launch's launcher leads process group `pgid` (known once it is spawned). */
  target(id: string, pgid: number): void {
    const entry = this.#armed.get(id);
    if (!entry) return;
    const sent = killable(entry);
    entry.pgid = pgid;
    if (sent) this.#send({ op: 'target', id, pgid });
    else this.#sendArm(id, entry);
  }

  beat(id: string, deadline: number): void {
    const entry = this.#armed.get(id);
    if (!entry || deadline <= entry.deadline) return;
    entry.deadline = deadline;
    if (killable(entry)) this.#send({ op: 'beat', id, deadline });
  }

  disarm(id: string): void {
    const entry = this.#armed.get(id);
    if (!entry) return;
    this.#armed.delete(id);
    if (killable(entry)) this.#send({ op: 'disarm', id });
  }

  /** Stops the watchdog; launches still armed are killed by it on the way out. */
  async close(): Promise<void> {
    this.#closed = true;
    const proc = this.#process;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.ref(); // waited for now
    // A disarm still queued must arrive: at EOF the watchdog kills every launch it holds armed.
    this.#flush();
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
      // What was queued for the dead one: the new one learns the whole state from the re-arms.
      this.#queued = [];
      for (const [id, entry] of this.#armed) this.arm(id, entry.deadline, entry);
    });
    // It must not keep a closing worker alive, nor be what keeps the event loop running.
    proc.unref();
    (proc.stdout as unknown as { unref?: () => void } | null)?.unref?.();
  }

  /**
   * Queues a line; the lines of one turn of the event loop go in one write. A pipe write that
   * wakes the watchdog costs more than the line, and a sandboxed launch sends three (arm,
   * target, disarm); an unconfined one two (its arm goes with its group).
   * An arm goes at once (`#sendArm`).
   */
  #send(message: Record<string, unknown>): void {
    this.#queued.push(`${JSON.stringify(message)}\n`);
    if (this.#queued.length === 1) setImmediate(() => this.#flush());
  }

  /**
   * An arm is written at once, with what is queued before it: a confined child's before it is
   * spawned, an unconfined one's as soon as its group is known (as its target was: nothing else
   * fences an unconfined child whose spawner is killed before the turn ends).
   */
  #sendArm(id: string, { deadline, uid, pgid }: { deadline: number } & WatchdogTarget): void {
    this.#send({
      op: 'arm',
      id,
      deadline,
      ...(uid === undefined ? {} : { uid }),
      ...(pgid === undefined ? {} : { pgid }),
    });
    this.#flush();
  }

  #flush(): void {
    if (this.#queued.length === 0) return;
    const lines = this.#queued.join('');
    this.#queued = [];
    this.#process?.stdin?.write(lines);
  }
}
