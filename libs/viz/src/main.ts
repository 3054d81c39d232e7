import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { deriveEdges } from './derive.js';
import { renderJournalHtml } from './html.js';
import { readJournalFile } from './journal.js';

export const USAGE = 'Usage: libos viz <journal.jsonl> [out.html] [--watch]';
export const WATCH_INTERVAL_MS = 2000;

export interface VizOptions {
  /** Ends `--watch` (otherwise it runs until the process is stopped). */
  signal?: AbortSignal;
  /** Re-render period in watch mode. */
  intervalMs?: number;
  stdout?: { write(text: string): unknown };
  stderr?: { write(text: string): unknown };
}

type VizArgs =
  | { type: 'run'; journal: string; out: string; watch: boolean }
  | { type: 'help' }
  | { type: 'error'; problem: string };

export function parseVizArgs(argv: readonly string[]): VizArgs {
  const positionals: string[] = [];
  let watch = false;
  for (const arg of argv) {
    if (arg === '--help' || arg === '-h') return { type: 'help' };
    if (arg === '--watch') watch = true;
    else if (arg.startsWith('-') && arg !== '-')
      return { type: 'error', problem: `unexpected argument '${arg}'` };
    else positionals.push(arg);
  }
  const [journal, out, ...more] = positionals;
  if (journal === undefined) return { type: 'error', problem: 'a journal path is required' };
  if (more.length > 0) return { type: 'error', problem: `unexpected argument '${more[0]}'` };
  return { type: 'run', journal, out: out ?? `${journal}.html`, watch };
}

/**
 * `libos viz <journal.jsonl> [out.html] [--watch]`. Render problems are printed (and retried in
 * watch mode), never reflected in the exit status; only a usage error exits nonzero.
 */
export async function vizMain(argv: readonly string[], options: VizOptions = {}): Promise<number> {
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const args = parseVizArgs(argv);
  if (args.type === 'help') {
    stdout.write(`${USAGE}\nRender a workflow journal as one self-contained HTML page.\n`);
    return 0;
  }
  if (args.type === 'error') {
    stderr.write(`libos viz: ${args.problem}\n${USAGE}\n`);
    return 2;
  }
  let last: string | undefined;
  for (;;) {
    try {
      last = await renderOnce(args.journal, args.out, args.watch, last, stdout);
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      stderr.write(args.watch ? `(${text} — retrying)\n` : `libos viz: ${text}\n`);
    }
    if (!args.watch) return 0;
    try {
      await sleep(options.intervalMs ?? WATCH_INTERVAL_MS, undefined, { signal: options.signal });
    } catch {
      return 0; // The watch was ended.
    }
  }
}

/** One render; returns the page written (or still current), so an unchanged page is not rewritten. */
async function renderOnce(
  journal: string,
  out: string,
  watch: boolean,
  previous: string | undefined,
  stdout: { write(text: string): unknown },
): Promise<string | undefined> {
  const entries = await readJournalFile(journal);
  if (entries.length === 0) {
    // Leaves any existing page alone.
    stdout.write(`journal ${journal} holds no entries yet\n`);
    return previous;
  }
  const page = renderJournalHtml(entries, journal, { watch });
  if (page === previous) return previous;
  await writeAtomic(out, page);
  stdout.write(`wrote ${out}: ${entries.length} entries, ${deriveEdges(entries).length} derived edge(s)\n`);
  return page;
}

/** A browser refreshing the page must never load half of it. */
async function writeAtomic(path: string, text: string): Promise<void> {
  const sibling = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(sibling, text, { flag: 'wx' });
    await rename(sibling, path);
  } catch (error) {
    await rm(sibling, { force: true });
    throw new Error(`cannot write ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
