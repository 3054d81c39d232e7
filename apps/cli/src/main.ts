import { Command } from 'commander';
import { registerClusterCommands } from './commands/cluster.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerImageCommands } from './commands/images.js';
import { registerMessageCommands } from './commands/messages.js';
import { registerProcessCommands } from './commands/processes.js';
import { PASSTHROUGH_COMMANDS, PASSTHROUGH_HELP } from './commands/tools.js';

function fail(error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`libos: ${message}\n`);
  process.exitCode = process.exitCode || 1;
}

const [first, ...rest] = process.argv.slice(2);
const passthrough = first === undefined ? undefined : PASSTHROUGH_COMMANDS[first];
if (passthrough) {
  passthrough(rest).then((code) => {
    process.exitCode = code;
  }, fail);
} else {
  const program = new Command('libos')
    .description('libos: a distributed runtime for agent processes')
    .option('--url <url>', 'coordinator URL (default: LIBOS_URL, the embedded cluster, or :7070)')
    .option('--admin-token <token>', 'admin token (default: LIBOS_ADMIN_TOKEN or .libos/admin-token)')
    .option('--token <token>', 'act as the process with this token (default: LIBOS_TOKEN)')
    .option('--dir <dir>', 'state directory of the embedded cluster (default: LIBOS_HOME or .libos)')
    .option('--json', 'print JSON instead of text')
    .addHelpText('after', PASSTHROUGH_HELP)
    .showHelpAfterError();
  registerClusterCommands(program);
  registerImageCommands(program);
  registerProcessCommands(program);
  registerMessageCommands(program);
  registerDemoCommand(program);
  program.parseAsync(process.argv).catch(fail);
}
