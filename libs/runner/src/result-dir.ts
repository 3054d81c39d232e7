import {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  mkdtempSync,
  openSync,
  readSync,
  rmdirSync,
  rmSync,
  statfsSync,
  unlinkSync,
} from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ResultFileEvidence } from '@libos/contract';
import { atExit } from './exit-cleanup.js';

export const RESULT_DIR_PREFIX = 'workflow-result-';

/** statfs(2)'s f_type of a tmpfs. */
const TMPFS_MAGIC = 0x01021994;

/**
 * `dir` when it is a tmpfs this process can write with at least `needBytes` free, else undefined.
 * The result directories are made, written once and removed at every launch: on a disk file
 * system each of those is a journalled metadata change (on a 2-core test VM's ext4 mkdtemp ~60 µs,
 * the child's write ~60 µs and rmdir 100-170 µs idle, about a millisecond under load, all on
 * the launcher's event loop), in memory a few µs each.
 */
export function memoryBacked(dir: string, needBytes: number): string | undefined {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    const fs = statfsSync(dir);
    return fs.type === TMPFS_MAGIC && fs.bavail * fs.bsize >= needBytes ? dir : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One launch's private directory: fresh from mkdtemp (0700), so no stale result can exist, and
 * removed once — `remove()` is idempotent, so every path can call it.
 *
 * Every file system call here is synchronous on purpose. Each is one system call on a directory
 * of the launcher's own (tens of µs), while the promise API's thread-pool round trip costs its
 * process far more CPU: measured on the 2-core CI VM, mkdtemp + rmdir 163 µs of CPU through
 * promises against 37 µs synchronous, a result file's read 200 µs against 13 µs. The runner
 * runs in the worker's spawner, whose event loop holds nothing but launches.
 */
export class ResultDir {
  readonly resultPath: string;
  #removed = false;
  readonly #dropExitCleanup: () => void;

  private constructor(readonly path: string) {
    this.resultPath = join(path, 'result.json');
    this.#dropExitCleanup = atExit(() => rmSync(path, { recursive: true, force: true }));
  }

  static create(parent = tmpdir()): ResultDir {
    return new ResultDir(mkdtempSync(join(parent, RESULT_DIR_PREFIX)));
  }

  /**
   * The child is untrusted and the reader may be more privileged: the file is opened without
   * following a symlink and without blocking (a FIFO would hang the reader), and only a regular
   * file with one link, of at most `maxBytes`, is read; anything else is unreadable, unread.
   */
  readResult(maxBytes: number): ResultFileEvidence {
    let fd: number;
    try {
      fd = openSync(this.resultPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (error) {
      if (isErrno(error) && error.code === 'ENOENT') return { kind: 'missing' };
      if (isErrno(error) && error.code === 'ELOOP') return unreadable('it is a symbolic link');
      return unreadable(error instanceof Error ? error.message : String(error));
    }
    try {
      const stat = fstatSync(fd);
      if (!stat.isFile()) return unreadable('it is not a regular file');
      if (stat.nlink !== 1) return unreadable('it has other hard links');
      if (stat.size > maxBytes) {
        return unreadable(`it is ${stat.size} bytes, over the limit of ${maxBytes} bytes`);
      }
      // At most maxBytes + 1: a file still growing past the limit is caught, never read whole.
      const buffer = Buffer.allocUnsafe(Math.min(stat.size, maxBytes) + 1);
      let length = 0;
      for (;;) {
        const read = readSync(fd, buffer, length, buffer.length - length, null);
        if (read === 0) break;
        length += read;
        if (length > maxBytes) return unreadable(`it is over the limit of ${maxBytes} bytes`);
      }
      return { kind: 'contents', text: buffer.subarray(0, length) };
    } catch (error) {
      return unreadable(error instanceof Error ? error.message : String(error));
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Removes the directory and whatever the child left in it; errors are ignored. The usual case
   * (only result.json, or nothing) is two synchronous calls. Anything else the child left goes
   * through an asynchronous recursive rm: a child that filled its directory with files must not
   * hold the launcher's event loop while they are deleted.
   */
  remove(): void {
    if (this.#removed) return;
    this.#removed = true;
    if (removeUsual(this.path, this.resultPath)) this.#dropExitCleanup();
    else
      void rm(this.path, { recursive: true, force: true })
        .catch(() => undefined)
        .finally(this.#dropExitCleanup);
  }
}

/** Removes `dir` holding at most `resultPath`; false when it holds anything else. */
function removeUsual(dir: string, resultPath: string): boolean {
  try {
    unlinkSync(resultPath);
  } catch (error) {
    if (!isErrno(error) || error.code !== 'ENOENT') return false;
  }
  try {
    rmdirSync(dir);
    return true;
  } catch (error) {
    // Already gone counts as removed; anything else (not empty, say) is for the recursive rm.
    return isErrno(error) && error.code === 'ENOENT';
  }
}

function unreadable(error: string): ResultFileEvidence {
  return { kind: 'unreadable', error };
}

function isErrno(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && 'code' in error;
}
