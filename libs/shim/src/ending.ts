import type { ChildEnding, Usage } from '@libos/contract';
import type { CliEnding } from './run-cli.js';
import { schemaProblem } from './schema-check.js';
import { usageField } from './tokens.js';

/** What a dialect's stream knew when its CLI ended. */
export interface StreamAccount {
  usage: Usage | undefined;
  steps: number;
  /** The CLI reported a failure of its own. */
  failure: string | undefined;
  /** The CLI said it ran out of turns (Claude's `error_max_turns`). */
  exhausted?: boolean;
  /** The report, once a successful result arrived. */
  report(): { answer: unknown } | undefined;
  /** Problems the run should not hide (an MCP server that failed to start): added to a failure's reason. */
  notices?: readonly string[];
  /** The schema the answer must satisfy; a mismatch is a failure. Absent: not checked. */
  schema?: unknown;
}

/**
 * The result of a finished CLI run, shared by the dialects (reference §3.1 precedence, §3.2 and
 * §3.3 "Endings"): a launch failure, then the parent's cancel, then a stop at the step ceiling,
 * then what the CLI's own stream and exit status say.
 */
export function cliEnding(name: string, cli: CliEnding, stream: StreamAccount): ChildEnding {
  const account = { ...usageField(stream.usage), steps: stream.steps };
  const notices = stream.notices ?? [];
  const failed = (reason: string): ChildEnding => ({
    status: 'failed',
    reason: notices.length === 0 ? reason : `${reason} (${notices.join('; ')})`,
    ...account,
  });
  switch (cli.type) {
    case 'failed':
      return failed(cli.reason);
    case 'cancelled':
      return { status: 'interrupted', reason: 'the parent closed stdin', ...account };
    case 'stopped':
      return { status: 'max_steps_exhausted', ...account };
    case 'exited': {
      if (stream.failure !== undefined) return failed(stream.failure);
      if (stream.exhausted) return { status: 'max_steps_exhausted', ...account };
      const report = stream.report();
      if (report !== undefined) {
        if (stream.schema !== undefined) {
          const problem = schemaProblem(stream.schema, report.answer);
          if (problem !== undefined) return failed(`the answer does not satisfy the schema: ${problem}`);
        }
        return { status: 'completed', output: report, ...account };
      }
      if (cli.code !== 0) return failed(`${name} exited ${cli.code} without a result`);
      if (notices.length > 0) return failed(`${name} ended without a result`);
      return { status: 'no_report', ...account };
    }
  }
}
