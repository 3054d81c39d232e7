import type { ChildEnding, Usage } from '@libos/contract';
import type { CliEnding } from './run-cli.js';
import { usageField } from './tokens.js';

/** What a dialect's stream knew when its CLI ended. */
export interface StreamAccount {
  usage: Usage | undefined;
  steps: number;
  /** The CLI reported a failure of its own. */
  failure: string | undefined;
  /** The CLI said it ran out of turns (Claude's `error_max_turns`). */
  exhausted?: boolean;
  /** The answer, once a successful result arrived. */
  report(): unknown;
}

/**
 * The result of a finished CLI run, shared by the dialects (reference §3.1 precedence, §3.2 and
 * §3.3 "Endings"): a launch failure, then the parent's cancel, then a stop at the step ceiling,
 * then what the CLI's own stream and exit status say.
 */
export function cliEnding(name: string, cli: CliEnding, stream: StreamAccount): ChildEnding {
  const account = { ...usageField(stream.usage), steps: stream.steps };
  switch (cli.type) {
    case 'failed':
      return { status: 'failed', reason: cli.reason, ...account };
    case 'cancelled':
      return { status: 'interrupted', reason: 'the parent closed stdin', ...account };
    case 'stopped':
      return { status: 'max_steps_exhausted', ...account };
    case 'exited': {
      if (stream.failure !== undefined) return { status: 'failed', reason: stream.failure, ...account };
      if (stream.exhausted) return { status: 'max_steps_exhausted', ...account };
      const report = stream.report();
      if (report !== undefined) return { status: 'completed', output: report, ...account };
      if (cli.code !== 0)
        return { status: 'failed', reason: `${name} exited ${cli.code} without a result`, ...account };
      return { status: 'no_report', ...account };
    }
  }
}
