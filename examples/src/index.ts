import { fileURLToPath } from 'node:url';
import { RESULT_FILE_PLACEHOLDER } from '@libos/contract';

// Paths are computed from this module's own location, which is `src/index.ts` from source and
// `dist/index.js` built: both sit one level below the package root.
const root = (relative: string) => fileURLToPath(new URL(`../${relative}`, import.meta.url));
const fromSource = import.meta.url.endsWith('.ts');

export const TS_CHILDREN = ['echo', 'sleep', 'usage', 'demo-worker', 'delegate', 'hosted-workflow'] as const;
export type TsChild = (typeof TS_CHILDREN)[number];

export const SH_CHILDREN = [
  'echo',
  'sleep-then-complete',
  'no-report',
  'cancel-aware',
  'never-reads-stdin',
  'exits-without-result',
  'spawns-grandchildren',
  'stdout-flood',
] as const;
export type ShChild = (typeof SH_CHILDREN)[number];

/** The TypeScript children made with `serveChild`: their source and built entry points. */
export const tsChildren: Record<TsChild, { source: string; built: string }> = Object.fromEntries(
  TS_CHILDREN.map((name) => [
    name,
    { source: root(`src/children/${name}.ts`), built: root(`dist/children/${name}.js`) },
  ]),
) as Record<TsChild, { source: string; built: string }>;

/** The shell children, `examples/children/<name>.sh`. */
export const shChildren: Record<ShChild, string> = Object.fromEntries(
  SH_CHILDREN.map((name) => [name, root(`children/${name}.sh`)]),
) as Record<ShChild, string>;

export interface ChildLaunch {
  command: string;
  args: string[];
}

/**
 * How to launch a TypeScript child: built (`node dist/children/<name>.js {result_file}`), or from
 * source through tsx. Defaults to however this module itself is running.
 */
export function tsChildLaunch(
  name: TsChild,
  from: 'source' | 'built' = fromSource ? 'source' : 'built',
): ChildLaunch {
  const child = tsChildren[name];
  if (from === 'built') return { command: process.execPath, args: [child.built, RESULT_FILE_PLACEHOLDER] };
  return {
    command: process.execPath,
    args: [
      '--import',
      import.meta.resolve('tsx'),
      '--conditions=@libos/source',
      child.source,
      RESULT_FILE_PLACEHOLDER,
    ],
  };
}

/** How to launch a shell child: `sh <file> {result_file} ...extra`. */
export function shChildLaunch(name: ShChild, ...extra: string[]): ChildLaunch {
  return { command: 'sh', args: [shChildren[name], RESULT_FILE_PLACEHOLDER, ...extra] };
}
