import { closeSync, constants, fstatSync, openSync, readSync, rmSync } from 'node:fs';
import { mkdtemp, rm, rmdir, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ResultFileEvidence } from '@libos/contract';
import { atExit } from './exit-cleanup.js';

export const RESULT_DIR_PREFIX = 'workflow-result-';

/**
 * One launch's private directory: fresh from mkdtemp (0700), so no stale result can exist, and
 * removed once — `remove()` is memoized, so every path can call it.
 */
export class ResultDir {
  readonly resultPath: string;
  #removal: Promise<void> | undefined;
  readonly #dropExitCleanup: () => void;

  private constructor(readonly path: string) {
    this.resultPath = join(path, 'result.json');
    this.#dropExitCleanup = atExit(() => rmSync(path, { recursive: true, force: true }));
  }

  static async create(): Promise<ResultDir> {
    return new ResultDir(await mkdtemp(join(tmpdir(), RESULT_DIR_PREFIX)));
  }

  /**
   * Synchronous on purpose: a result file is read from the page cache in microseconds, while
   * the promise API's open/stat/read/close thread-pool round trips cost ten times that in CPU
   * per launch (measured: ~9 µs against ~90 µs). Directory changes stay asynchronous: they may
   * wait on the file system's journal.
   *
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
   * (only result.json, or nothing) takes two calls; anything else falls back to a recursive rm.
   */
  remove(): Promise<void> {
    this.#removal ??= removeDir(this.path, this.resultPath).finally(this.#dropExitCleanup);
    return this.#removal;
  }
}

async function removeDir(dir: string, resultPath: string): Promise<void> {
  try {
    await unlink(resultPath).catch((error: unknown) => {
      if (!isErrno(error) || error.code !== 'ENOENT') throw error;
    });
    await rmdir(dir);
  } catch {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

function unreadable(error: string): ResultFileEvidence {
  return { kind: 'unreadable', error };
}

function isErrno(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && 'code' in error;
}
