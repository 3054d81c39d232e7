import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The CLI from source: `node ...CLI_FROM_SOURCE <args>` runs `libos <args>` without a build. */
export const CLI = fileURLToPath(new URL('../src/main.ts', import.meta.url));
export const CLI_FROM_SOURCE = ['--import', 'tsx', '--conditions=@libos/source', CLI];

/** The direct children of `parent`, each with its command line. */
export function childrenOf(parent: number): { pid: number; cmdline: string }[] {
  const found: { pid: number; cmdline: string }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== parent) continue;
      found.push({
        pid: Number(name),
        cmdline: readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' '),
      });
    } catch {}
  }
  return found;
}
