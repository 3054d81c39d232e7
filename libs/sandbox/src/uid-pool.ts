import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** An inclusive range of uids reserved for children (`LIBOS_CHILD_UIDS=20000-29999`). */
export interface UidRange {
  first: number;
  last: number;
}

export function parseUidRange(text: string): UidRange {
  const match = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text);
  const first = Number(match?.[1]);
  const last = Number(match?.[2]);
  if (!match || first < 1000 || last < first || last > 4_294_967_294) {
    throw new Error(`a uid range is FIRST-LAST with 1000 <= FIRST <= LAST (got "${text}")`);
  }
  return { first, last };
}

/**
 * The uids of the children running on this host: one per running child, never shared. Every
 * worker on the host allocates from the same lock directory (one file per uid in use, created
 * with O_EXCL and holding the owner's OS pid), so two workers never hand out the same uid. A
 * lock whose owner is dead is taken over: its sandboxes died with it (they die with their parent).
 */
export class UidPool {
  #next: number;
  /** Uids this pool holds the lock of: in use, or parked for reuse. */
  readonly #held = new Set<number>();
  /** Released by their last child, still locked: reused first, so a worker cycles through few. */
  readonly #parked: number[] = [];

  constructor(
    readonly range: UidRange,
    readonly lockDir: string,
  ) {
    mkdirSync(lockDir, { recursive: true, mode: 0o700 });
    // Start somewhere random, so workers on one host rarely probe the same locks.
    this.#next = range.first + Math.floor(Math.random() * (range.last - range.first + 1));
  }

  get size(): number {
    return this.range.last - this.range.first + 1;
  }

  /** A uid no other running child has; throws when every uid of the range is in use. */
  acquire(): number {
    const parked = this.#parked.pop();
    if (parked !== undefined) return parked;
    for (let tried = 0; tried < this.size; tried += 1) {
      const uid = this.#next;
      this.#next = uid === this.range.last ? this.range.first : uid + 1;
      if (this.#held.has(uid)) continue;
      if (this.#lock(uid)) {
        this.#held.add(uid);
        return uid;
      }
    }
    throw new Error(`every child uid of ${this.range.first}-${this.range.last} is in use on this host`);
  }

  /**
   * The uid's child is gone: the uid is parked, still locked, for this pool's next child (its
   * cgroup and lock are reused, which saves creating them per launch).
   */
  release(uid: number): void {
    if (this.#held.has(uid) && !this.#parked.includes(uid)) this.#parked.push(uid);
  }

  /** Gives the uid back to the host (its lock file goes). */
  retire(uid: number): void {
    if (!this.#held.delete(uid)) return;
    const at = this.#parked.indexOf(uid);
    if (at >= 0) this.#parked.splice(at, 1);
    try {
      unlinkSync(this.#path(uid));
    } catch {}
  }

  /** Gives back every uid this pool holds (the worker is closing). */
  releaseAll(): void {
    for (const uid of [...this.#held]) this.retire(uid);
  }

  #path(uid: number): string {
    return join(this.lockDir, String(uid));
  }

  #lock(uid: number): boolean {
    const path = this.#path(uid);
    for (let round = 0; round < 2; round += 1) {
      try {
        const fd = openSync(path, 'wx', 0o600);
        writeSync(fd, String(process.pid));
        closeSync(fd);
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      if (!ownerIsDead(path)) return false;
      try {
        unlinkSync(path);
      } catch {}
    }
    return false;
  }
}

function ownerIsDead(path: string): boolean {
  let owner: number;
  try {
    owner = Number(readFileSync(path, 'utf8'));
  } catch {
    return false;
  }
  if (!Number.isInteger(owner) || owner <= 0) return true;
  if (owner === process.pid) return false;
  try {
    process.kill(owner, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
