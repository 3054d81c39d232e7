import {
  chmodSync,
  closeSync,
  constants,
  lstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** A spawner's own directory under a result parent: `<parent>/libos-spawner-XXXXXX`. */
export const RESULT_HOME_PREFIX = 'libos-spawner-';
/** Held locked (flock) by the spawner for its whole life. */
const LOCK_FILE = '.lock';
/** A home with no lock file yet is being made; one older than this was left half made. */
const HALF_MADE_MS = 60_000;
const LOCK_EX = 2;
const LOCK_NB = 4;

type Flock = (fd: number, operation: number) => number;
let flockCall: Flock | null | undefined;

/** glibc's flock(2) through koffi (already loaded for posix_spawn and prlimit), or null. */
function flock(): Flock | null {
  if (flockCall !== undefined) return flockCall;
  flockCall = null;
  if (process.platform !== 'linux') return flockCall;
  try {
    const koffi: typeof import('koffi') = createRequire(import.meta.url)('koffi');
    flockCall = koffi.load('libc.so.6').func('int flock(int fd, int operation)') as Flock;
  } catch {
    // no prebuilt koffi for this host, or no glibc: launches' directories go in the parent itself
  }
  return flockCall;
}

/**
 * Where a spawner's launches make their result directories: a home of its own under each result
 * parent, holding a lock for the spawner's life. The spawner's ending removes its homes; a
 * spawner that dies without it (SIGKILL, the OOM killer, a stop that outwaited its worker) leaves
 * its launches' directories behind, in memory when the parent is /dev/shm. So the first launch
 * into a parent sweeps it: every other spawner's home whose lock can be taken (its owner is gone)
 * is removed, whichever worker of the host it belonged to. A lock, not a pid: it holds across pid
 * namespaces (containers sharing the parent) and pid reuse.
 */
export class ResultHomes {
  readonly #homes = new Map<string, string>();
  readonly #locks: number[] = [];
  readonly #sweeps = new Map<string, Promise<void>>();

  constructor() {
    // The spawner's ending (its process.exit) removes its homes.
    process.once('exit', () => this.close());
  }

  /** This spawner's home in `parent`, made on first use; undefined while none can be made there. */
  homeIn(parent: string): string | undefined {
    const known = this.#homes.get(parent);
    if (known !== undefined) return known;
    const lock = flock();
    if (!lock) return undefined;
    // Swept once, whether or not a home can be made now: a parent full of what gone spawners
    // left is the very case this is for.
    if (!this.#sweeps.has(parent)) this.#sweeps.set(parent, sweep(parent, lock));
    const home = makeHome(parent, lock);
    if (!home) return undefined; // gone, full, not ours to write: the launch's own fallback decides
    this.#homes.set(parent, home.path);
    this.#locks.push(home.fd);
    return home.path;
  }

  /** Resolves once every sweep started so far has ended (for tests). */
  async swept(): Promise<void> {
    await Promise.all(this.#sweeps.values());
  }

  /**
   * Removes this spawner's homes and lets their locks go. Synchronous, and it never throws: it
   * runs at exit, before the runner's own exit cleanup (which kills what is left).
   */
  close(): void {
    for (const home of this.#homes.values()) removeQuietly(home);
    for (const fd of this.#locks.splice(0)) {
      try {
        closeSync(fd);
      } catch {}
    }
    this.#homes.clear();
  }
}

/** A new home in `parent`, its lock held, or undefined (and nothing left behind). */
function makeHome(parent: string, lock: Flock): { path: string; fd: number } | undefined {
  let path: string | undefined;
  let fd: number | undefined;
  try {
    path = mkdtempSync(join(parent, RESULT_HOME_PREFIX));
    // Launches run as uids of their own pass through it to their directory.
    chmodSync(path, 0o711);
    // Locked before it is named `.lock`, so a sweep never finds this home's lock free.
    const making = join(path, `${LOCK_FILE}-making`);
    fd = openSync(making, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    if (lock(fd, LOCK_EX | LOCK_NB) !== 0) throw new Error('flock refused');
    renameSync(making, join(path, LOCK_FILE));
    return { path, fd };
  } catch {
    if (fd !== undefined) closeSync(fd);
    if (path !== undefined) removeQuietly(path);
    return undefined;
  }
}

function removeQuietly(path: string): void {
  try {
    rmSync(path, { recursive: true, force: true });
  } catch {}
}

/** Removes the homes in `parent` whose spawner is gone: those whose lock this process can take. */
async function sweep(parent: string, lock: Flock): Promise<void> {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  const uid = process.getuid?.();
  for (const name of names) {
    const home = join(parent, name);
    if (!name.startsWith(RESULT_HOME_PREFIX)) continue;
    let fd: number | undefined;
    try {
      // Only a real directory made by this uid: a parent such as /dev/shm is anyone's to write.
      const stat = lstatSync(home);
      if (!stat.isDirectory() || stat.uid !== uid) continue;
      try {
        fd = openSync(
          join(home, LOCK_FILE),
          constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
        );
      } catch (error) {
        const halfMade =
          (error as NodeJS.ErrnoException).code === 'ENOENT' && Date.now() - stat.mtimeMs > HALF_MADE_MS;
        if (halfMade) await rm(home, { recursive: true, force: true });
        continue;
      }
      // Held: its spawner lives. Taken: it is gone, and no other sweep can take it meanwhile.
      if (lock(fd, LOCK_EX | LOCK_NB) !== 0) continue;
      await rm(home, { recursive: true, force: true });
    } catch {
      // gone meanwhile, or not ours to read: left alone
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
}
