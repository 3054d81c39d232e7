import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

/**
 * The file exec would run for `command` on `pathVar` (the child's PATH), searched as execvp does:
 * an empty entry is the cwd, a relative one is relative to it. A command with a slash is returned
 * as it is (relative to the child's cwd, as exec resolves it).
 */
export function findExecutable(
  command: string,
  cwd: string | undefined,
  pathVar: string | undefined,
): string | undefined {
  if (command.includes('/')) return command;
  for (const dir of (pathVar ?? '/usr/local/bin:/usr/bin:/bin').split(delimiter)) {
    const base = dir === '' ? '.' : dir;
    const candidate = join(isAbsolute(base) ? base : resolve(cwd ?? '.', base), command);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/**
 * An executable regular file; any error reaching it (a PATH entry that is a file: ENOTDIR) means
 * not. A missing file answers without an exception: a search tries it in each PATH directory
 * before the one that has it, and the thrown ENOENTs were three quarters of a search's CPU.
 */
export function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path, { throwIfNoEntry: false })?.isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
