// A workflow driven from its own process, so a test can SIGKILL it midway:
// fan-out-main.ts <journal> <launch log> <items> <max concurrent> <child seconds>
import { runFanOut } from './fan-out.js';

const [journalPath, launchLog, items, maxConcurrent, childSeconds] = process.argv.slice(2);
if (!journalPath || !launchLog || !items || !maxConcurrent || !childSeconds) {
  process.stderr.write(
    'usage: fan-out-main.ts <journal> <launch log> <items> <max concurrent> <child seconds>\n',
  );
  process.exit(2);
}
const summary = await runFanOut({
  journalPath,
  launchLog,
  items: Number(items),
  maxConcurrent: Number(maxConcurrent),
  childSeconds: Number(childSeconds),
});
process.stdout.write(`${JSON.stringify(summary)}\n`);
