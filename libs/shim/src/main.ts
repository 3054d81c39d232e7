import { claudeDialect } from './dialects/claude.js';
import { codexDialect } from './dialects/codex.js';
import { EXIT_USAGE, type ShimDialect, serveShim } from './serve.js';

export type DialectName = 'claude' | 'codex';

export const DIALECTS: Record<DialectName, ShimDialect> = { claude: claudeDialect, codex: codexDialect };

const USAGE = 'Usage: libos shim <claude|codex> --result-file PATH [options] [-- CLI args...]';

/**
 * One shim run on this process's stdio, resolving to the exit status for the caller to exit
 * with (`libos shim claude …`). stdin is released afterwards, so an open pipe cannot keep the
 * process alive.
 */
export async function runShim(dialect: DialectName, argv: string[]): Promise<number> {
  try {
    return await serveShim(DIALECTS[dialect], argv, {
      stdin: process.stdin,
      stdout: process.stdout,
      stderr: process.stderr,
    });
  } finally {
    process.stdin.destroy();
  }
}

export function isDialectName(name: string | undefined): name is DialectName {
  return name === 'claude' || name === 'codex';
}

/** `<dialect> [shim options]`: the bin's and the CLI's entry. */
export async function shimMain(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (!isDialectName(name)) {
    process.stderr.write(
      `libos shim: unknown dialect ${name === undefined ? '(none)' : `'${name}'`}\n${USAGE}\n`,
    );
    return EXIT_USAGE;
  }
  return runShim(name, rest);
}
