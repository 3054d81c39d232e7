/** A wait on the clock: resolves once its time has elapsed while the clock was running. */
export interface ClockWait {
  readonly done: Promise<void>;
  cancel(): void;
}

interface PendingWait {
  remaining: number;
  startedAt: number;
  timer: NodeJS.Timeout | undefined;
  resolve: () => void;
}

/**
 * The runner's time source for the deadline, the grace window and the exit wait. It can be
 * paused (while the child's process group is stopped) and resumed with the time each wait had
 * left, so a stopped child is not charged for the time it could not run.
 */
export class PausableClock {
  #paused = false;
  readonly #waits = new Set<PendingWait>();

  get paused(): boolean {
    return this.#paused;
  }

  wait(ms: number): ClockWait {
    const wait: PendingWait = {
      remaining: Math.max(0, ms),
      startedAt: 0,
      timer: undefined,
      resolve: () => {},
    };
    const done = new Promise<void>((resolve) => {
      wait.resolve = resolve;
    });
    this.#waits.add(wait);
    if (!this.#paused) this.#arm(wait);
    return {
      done,
      cancel: () => {
        clearTimeout(wait.timer);
        this.#waits.delete(wait);
      },
    };
  }

  pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    const now = performance.now();
    for (const wait of this.#waits) {
      clearTimeout(wait.timer);
      wait.timer = undefined;
      wait.remaining = Math.max(0, wait.remaining - (now - wait.startedAt));
    }
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    for (const wait of this.#waits) this.#arm(wait);
  }

  /** Cancels every pending wait (teardown); their promises never settle. */
  stop(): void {
    for (const wait of this.#waits) clearTimeout(wait.timer);
    this.#waits.clear();
  }

  #arm(wait: PendingWait): void {
    wait.startedAt = performance.now();
    wait.timer = setTimeout(() => {
      this.#waits.delete(wait);
      wait.resolve();
    }, wait.remaining);
  }
}
