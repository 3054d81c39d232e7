export type ChildArgv = { ok: true; resultFile: string; rest: string[] } | { ok: false; problem: string };

const FLAG = '--result-file';

/**
 * Finds the result path in a child's arguments: `--result-file PATH`, `--result-file=PATH`, or,
 * when there is no such flag, the sole positional argument. Everything else is left in `rest`
 * for the child's own options.
 */
export function parseChildArgv(argv: readonly string[]): ChildArgv {
  const rest: string[] = [];
  let resultFile: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === FLAG || arg.startsWith(`${FLAG}=`)) {
      const value = arg === FLAG ? argv[++i] : arg.slice(FLAG.length + 1);
      if (value === undefined || value.trim() === '') return { ok: false, problem: `${FLAG} needs a path` };
      resultFile = value;
    } else {
      rest.push(arg);
    }
  }
  if (resultFile !== undefined) return { ok: true, resultFile, rest };
  const positional = rest.filter((arg) => !arg.startsWith('-'));
  const sole = positional[0];
  if (positional.length === 1 && sole !== undefined && sole.trim() !== '') {
    return { ok: true, resultFile: sole, rest: rest.filter((arg) => arg !== sole) };
  }
  return { ok: false, problem: `pass the result path as ${FLAG} PATH or as the sole argument` };
}
