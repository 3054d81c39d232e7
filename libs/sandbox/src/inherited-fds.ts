import { closeSync, readdirSync, readFileSync } from 'node:fs';

/** O_CLOEXEC in /proc/<pid>/fdinfo's octal `flags`. */
const O_CLOEXEC = 0o2000000;

/**
 * Closes every descriptor this process inherited without close-on-exec (above 2, but for `keep`):
 * they would pass on to every child it launches (an operator's shell's open file, a pipe of what
 * started the worker). Node opens all of its own with close-on-exec, so none of them is touched.
 * Returns how many it closed.
 */
export function closeInheritedFds(keep: readonly number[] = []): number {
  let closed = 0;
  for (const name of readdirSync('/proc/self/fd')) {
    const fd = Number(name);
    if (fd <= 2 || keep.includes(fd)) continue;
    let flags: number;
    try {
      const info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
      flags = Number.parseInt(/^flags:\s*([0-7]+)/m.exec(info)?.[1] ?? '', 8);
    } catch {
      continue; // the listing's own descriptor, closed by now
    }
    if (Number.isNaN(flags) || (flags & O_CLOEXEC) !== 0) continue;
    try {
      closeSync(fd);
      closed += 1;
    } catch {}
  }
  return closed;
}
