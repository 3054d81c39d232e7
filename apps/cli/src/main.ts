import { readFileSync } from 'node:fs';
import tab from '@bomb.sh/tab/commander';
import { PROCESS_STATUSES, SIGNALS } from '@libos/protocol';
import { Command } from 'commander';
import { registerClusterCommands } from './commands/cluster.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerGcCommands } from './commands/gc.js';
import { registerImageCommands } from './commands/images.js';
import { registerLogCommands } from './commands/logs.js';
import { registerMessageCommands } from './commands/messages.js';
import { registerProcessCommands } from './commands/processes.js';
import { PASSTHROUGH_COMMANDS, PASSTHROUGH_HELP } from './commands/tools.js';
import { fail } from './errors.js';

/** apps/cli/package.json: one level above both `src/` and `dist/`. */
function version(): string {
  const pkg: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return (pkg as { version?: string }).version ?? 'unknown';
}

/**
 * Commander's usage errors as one line, naming the command whose `--help` tells more, instead
 * of the error followed by the whole help text.
 */
function oneLineUsageErrors(command: Command, path: string[] = []): void {
  const name = ['libos', ...path].join(' ');
  command.configureOutput({
    outputError: (text, write) =>
      write(
        `libos: ${text
          .replace(/^error: /, '')
          .replace(/\s+/g, ' ')
          .trim()} (see \`${name} --help\`)\n`,
      ),
  });
  for (const sub of command.commands) oneLineUsageErrors(sub, [...path, sub.name()]);
}

/**
 * tab's bash script calls `_get_comp_words_by_ref` of the bash-completion package; where that
 * package is missing, this stands in for it (no `=`/`:` word-break handling).
 */
const BASH_WITHOUT_BASH_COMPLETION = `# Without the bash-completion package: the one helper of it the script below uses.
if ! declare -F _get_comp_words_by_ref >/dev/null; then
  _get_comp_words_by_ref() {
    cur="\${COMP_WORDS[COMP_CWORD]}"
    prev="\${COMP_WORDS[COMP_CWORD-1]}"
    words=("\${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  }
fi
`;

// Whatever escapes a command (a rejected promise nobody awaited, a throw in a callback) is still
// one line, never a stack.
process.on('uncaughtException', (error) => {
  fail(error);
  process.exit();
});
process.on('unhandledRejection', (error) => {
  fail(error);
  process.exit();
});

const [first, ...rest] = process.argv.slice(2);
const passthrough = first === undefined ? undefined : PASSTHROUGH_COMMANDS[first];
if (passthrough) {
  passthrough(rest).then((code) => {
    process.exitCode = code;
  }, fail);
} else {
  const program = new Command('libos')
    .description('libos: a distributed runtime for agent processes')
    .version(version(), '-V, --version', 'print the version')
    .option('--url <url>', 'coordinator URL (default: LIBOS_URL, the embedded cluster, or :7070)')
    .option(
      '--admin-token <token>',
      'admin token (default: LIBOS_ADMIN_TOKEN, the file LIBOS_ADMIN_TOKEN_FILE names, or .libos/admin-token)',
    )
    .option('--token <token>', 'act as the process with this token (default: LIBOS_TOKEN)')
    .option('--dir <dir>', 'state directory of the embedded cluster (default: LIBOS_HOME or .libos)')
    .option('--json', 'print JSON instead of text')
    .addHelpText('after', PASSTHROUGH_HELP);
  registerClusterCommands(program);
  registerImageCommands(program);
  registerProcessCommands(program);
  registerLogCommands(program);
  registerMessageCommands(program);
  registerGcCommands(program);
  registerDemoCommand(program);
  // `libos completion bash|zsh|fish|powershell` prints a script; the shell then calls the hidden
  // `libos complete -- <words>` for suggestions, read from the commander tree above.
  const completion = tab(program, { completionCommandName: 'completion' });
  for (const name of Object.keys(PASSTHROUGH_COMMANDS)) completion.command(name, `see \`libos --help\``);
  const choices = (values: readonly string[]) => (complete: (value: string, description: string) => void) => {
    for (const value of values) complete(value, '');
  };
  const signalArgument = completion.commands.get('signal')?.arguments.get('signal');
  if (signalArgument) signalArgument.handler = choices(SIGNALS);
  const statusOption = completion.commands.get('ps')?.options.get('status');
  if (statusOption) statusOption.handler = choices(PROCESS_STATUSES);
  program.commands
    .find((command) => command.name() === 'completion')
    ?.hook('preAction', (command) => {
      if (command.args[0] === 'bash') process.stdout.write(BASH_WITHOUT_BASH_COMPLETION);
    });
  oneLineUsageErrors(program);
  // A reader that stops early (`libos ps --json | head`) is not an error of ours.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
  program.parseAsync(process.argv).catch(fail);
}
