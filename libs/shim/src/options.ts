import { TOOL_NAMES } from '@libos/protocol';

// The shim's own argv (reference §3.1 "Options"): deployment settings, never part of the request.
// Everything after the first `--` reaches the CLI verbatim and is never parsed here, so a CLI flag
// can never be taken for one of ours, nor ours be swallowed as passthrough.

export interface ShimOptions {
  /** Where the result document is written (the runner's `{result_file}`). */
  resultFile: string;
  /** The CLI executable; defaults to the dialect's name on PATH. */
  command: string;
  model?: string;
  /** The CLI's working directory. */
  cwd?: string;
  /** A write-capable run (otherwise read-only unless the request's kind is `worker`). */
  writable: boolean;
  /** A JSON Schema file, used when the request carries no schema of its own. */
  schema?: string;
  /** Check the answer against the schema (a mismatch is `failed`); off with `--no-schema-check`. */
  schemaCheck: boolean;
  /** Wire the libos MCP server into the CLI when LIBOS_URL/PID/TOKEN are set; off with `--no-libos-mcp`. */
  libosMcp: boolean;
  /** The libos tools offered to the model (`--libos-tools a,b`); absent: all of them. */
  libosTools?: string[];
  /** Passthrough arguments (after `--`). */
  extra: string[];
}

export type ParsedOptions =
  | { type: 'options'; options: ShimOptions }
  | { type: 'help'; text: string }
  | { type: 'error'; problem: string };

const VALUE_OPTIONS = [
  '--result-file',
  '--command',
  '--model',
  '--cwd',
  '--schema',
  '--libos-tools',
] as const;
type ValueOption = (typeof VALUE_OPTIONS)[number];
const FLAG_OPTIONS = ['--writable', '--no-schema-check', '--no-libos-mcp', '--help'] as const;
const KNOWN = [...VALUE_OPTIONS, ...FLAG_OPTIONS];

export function shimHelp(dialect: string): string {
  return [
    `Usage: libos shim ${dialect} --result-file PATH [options] [-- ${dialect} args...]`,
    '',
    `Drive the ${dialect} CLI as a libos child: one request line on stdin, one result file.`,
    'Closing stdin cancels the run (the result is then `interrupted`).',
    '',
    'Options:',
    '  --result-file PATH  where the result document is written (required)',
    `  --command EXE       the CLI executable (default: ${dialect})`,
    "  --model NAME        forwarded as the CLI's model flag",
    "  --cwd DIR           the CLI's working directory",
    '  --writable          write-capable run (default: read-only unless kind = worker)',
    '  --schema FILE       JSON Schema for the answer, when the request carries none',
    '  --no-schema-check   keep an answer that does not satisfy the schema (default: failed)',
    '  --no-libos-mcp      do not give the CLI the libos MCP server (default: given when',
    '                      LIBOS_URL, LIBOS_PID and LIBOS_TOKEN are set, as in a libos child)',
    '  --libos-tools A,B   offer only these libos tools (default: all)',
    '  --help              print this help',
    `  -- ARGS...          passed to ${dialect} unchanged`,
  ].join('\n');
}

/** Parses the shim's argv (without the dialect name). Unknown options are refused, with help. */
export function parseShimOptions(argv: readonly string[], dialect: string): ParsedOptions {
  const cut = argv.indexOf('--');
  const own = cut === -1 ? argv : argv.slice(0, cut);
  const extra = cut === -1 ? [] : argv.slice(cut + 1);
  if (own.includes('--help') || own.includes('-h')) return { type: 'help', text: shimHelp(dialect) };

  const values: Partial<Record<ValueOption, string>> = {};
  let writable = false;
  let schemaCheck = true;
  let libosMcp = true;
  for (let i = 0; i < own.length; i++) {
    const arg = own[i] ?? '';
    if (arg === '--writable') {
      writable = true;
      continue;
    }
    if (arg === '--no-schema-check') {
      schemaCheck = false;
      continue;
    }
    if (arg === '--no-libos-mcp') {
      libosMcp = false;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg : arg.slice(0, eq);
    const option = VALUE_OPTIONS.find((known) => known === name);
    if (option === undefined) return refuse(`unexpected argument '${arg}'${suggestion(name)}`, dialect);
    let value: string | undefined;
    if (eq !== -1) value = arg.slice(eq + 1);
    else {
      value = own[i + 1];
      i++;
    }
    if (value === undefined)
      return refuse(`${option} needs ${option === '--result-file' ? 'a path' : 'a value'}`, dialect);
    values[option] = value;
  }

  const resultFile = values['--result-file'];
  if (resultFile === undefined) return refuse('the --result-file PATH option is required', dialect);
  if (resultFile.trim() === '') return refuse('--result-file needs a path', dialect);
  const command = values['--command'];
  if (command !== undefined && command.trim() === '') return refuse('--command needs a value', dialect);

  const options: ShimOptions = {
    resultFile,
    command: command ?? dialect,
    writable,
    schemaCheck,
    libosMcp,
    extra: [...extra],
  };
  const tools = values['--libos-tools'];
  if (tools !== undefined) {
    const names = tools
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name !== '');
    const unknown = names.filter((name) => !(TOOL_NAMES as string[]).includes(name));
    if (names.length === 0) return refuse('--libos-tools needs tool names separated by commas', dialect);
    if (unknown.length > 0)
      return refuse(
        `--libos-tools: no libos tool named ${unknown.join(', ')} (see design/system.md)`,
        dialect,
      );
    options.libosTools = names;
  }
  const model = values['--model'];
  const cwd = values['--cwd'];
  const schema = values['--schema'];
  if (model !== undefined) options.model = model;
  if (cwd !== undefined) options.cwd = cwd;
  if (schema !== undefined) options.schema = schema;
  return { type: 'options', options };
}

function refuse(problem: string, dialect: string): ParsedOptions {
  return { type: 'error', problem: `${problem}\n\n${shimHelp(dialect)}` };
}

/** A near miss (`--writeable`) names the option that was meant. */
function suggestion(name: string): string {
  if (!name.startsWith('-')) return '';
  let best: string | undefined;
  let bestDistance = 3;
  for (const known of KNOWN) {
    const distance = editDistance(name, known);
    if (distance < bestDistance) {
      best = known;
      bestDistance = distance;
    }
  }
  return best === undefined ? '' : ` (did you mean '${best}'?)`;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
