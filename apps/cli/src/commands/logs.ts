import type { ChildLogLine, ChildLogPage } from '@libos/protocol';
import type { Command } from 'commander';
import { adminClient, type GlobalOptions } from '../context.js';
import { CliError } from '../errors.js';
import { paint } from '../output.js';

/**
 * A child's bytes as one safe terminal line: control characters (escape sequences included)
 * are shown as `\xNN`, so a child cannot move the cursor or retitle the operator's terminal.
 */
export function printable(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: they are what this replaces
  return text.replace(/[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g, (c) => {
    return `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
  });
}

/** `time stream line`, stderr marked in red. */
export function logLine(line: ChildLogLine): string {
  const stream = line.stream === 'stderr' ? paint('red', 'stderr') : 'stdout';
  return `${paint('grey', line.time)} ${stream} ${printable(line.line)}`;
}

function droppedLine(bytes: number, attempt: number): string {
  return paint(
    'yellow',
    `… ${bytes} bytes of attempt ${attempt}'s oldest output dropped (the log keeps its newest) …`,
  );
}

function parseAttempt(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const attempt = Number(text);
  if (!/^\d+$/.test(text) || attempt < 1)
    throw new CliError(`--attempt must be a whole number from 1, not "${text}"`);
  return attempt;
}

export function registerLogCommands(program: Command): void {
  program
    .command('logs')
    .description(
      "a process's child output (stdout and stderr) for one attempt; -f follows it until the attempt ends",
    )
    .argument('<pid>', 'the process')
    .option('-f, --follow', 'print new lines as they come, until the attempt ends')
    .option('--attempt <n>', 'which attempt (default: the latest)')
    .action(async (pid: string, opts: { follow?: boolean; attempt?: string }) => {
      const global = program.opts<GlobalOptions>();
      const attempt = parseAttempt(opts.attempt);
      const admin = await adminClient(global);
      const query = attempt === undefined ? {} : { attempt };
      const write = (text: string) => process.stdout.write(`${text}\n`);
      if (opts.follow) {
        // --json: one JSON line per output line (NDJSON), as they come
        let dropped = 0;
        for await (const page of admin.followLogs(pid, query)) {
          if (page.dropped_bytes > dropped && !global.json)
            write(droppedLine(page.dropped_bytes - dropped, page.attempt));
          dropped = page.dropped_bytes;
          for (const line of page.lines) write(global.json ? JSON.stringify(line) : logLine(line));
        }
        return;
      }
      let page: ChildLogPage = await admin.readLogs(pid, query);
      const lines = [...page.lines];
      while (page.has_more && page.next) {
        page = await admin.readLogs(pid, { attempt: page.attempt, after: page.next });
        lines.push(...page.lines);
      }
      if (global.json) {
        write(JSON.stringify({ ...page, lines, has_more: false }, null, 2));
        return;
      }
      if (page.dropped_bytes > 0) write(droppedLine(page.dropped_bytes, page.attempt));
      for (const line of lines) write(logLine(line));
      // Said on stderr, so that stdout stays the output alone.
      if (lines.length === 0 && page.dropped_bytes === 0)
        process.stderr.write(
          `libos: attempt ${page.attempt} of ${pid} ${page.ended ? 'wrote' : 'has written'} nothing to stdout or stderr${page.ended ? '' : ' yet'}\n`,
        );
    });
}
