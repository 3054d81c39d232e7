import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The cwd of the roots the tests create: shown read-write in their children's sandboxes, and
 * world-writable, since every child runs as a uid of its own. Removed when the test process exits.
 */
export const WORKSPACE = mkdtempSync(join(tmpdir(), 'libos-e2e-ws-'));
chmodSync(WORKSPACE, 0o777);
process.once('exit', () => rmSync(WORKSPACE, { recursive: true, force: true }));

/** A temporary directory shared by a test and the children it launches (same host). */
export interface Scratch {
  readonly dir: string;
  path(name: string): string;
  /** The non-empty lines of a file; none when it does not exist yet. */
  lines(name: string): Promise<string[]>;
  /** Creates (touches) a file: how tests release children that wait for it. */
  touch(name: string): Promise<void>;
  remove(): Promise<void>;
}

export async function scratch(prefix = 'libos-e2e-'): Promise<Scratch> {
  const dir = await mkdtemp(join(WORKSPACE, prefix));
  await chmod(dir, 0o777);
  const path = (name: string) => join(dir, name);
  return {
    dir,
    path,
    async lines(name) {
      try {
        return (await readFile(path(name), 'utf8')).split('\n').filter((line) => line !== '');
      } catch {
        return [];
      }
    },
    touch: (name) => writeFile(path(name), ''),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
