import { z } from 'zod';
import { RESULT_FILE_PLACEHOLDER } from './placeholder.js';
import { type ChildEnding, decodeResultFile } from './result.js';
import { type Usage, usageSchema } from './usage.js';

/** Exact texts of the reference (§1.3, §1.4, §1.8, §1.10, §1.12). */
export const TEXTS = {
  argvLacksPlaceholder: `the argv must name ${RESULT_FILE_PLACEHOLDER}, where the child writes its result`,
  notLaunched: 'the child was not launched',
  noDirectory: (error: string) => `no directory for the result file: ${error}`,
  pipesUnavailable: (error: string) => `child pipes unavailable: ${error}`,
  spawnFailed: (error: string) => `child spawn failed: ${error}`,
  streamFailed: (error: string) => `child stream failed: ${error}`,
  runnerFailed: (error: string) => `child runner failed: ${error}`,
  noResult: (exitCode: number | undefined) =>
    `the child ${exitCode === undefined ? 'did not exit in time' : `exited ${exitCode}`} without writing a result`,
  unreadable: (error: string) => `the result file is unreadable: ${error}`,
  malformed: (problem: string) => `malformed result file: ${problem}`,
} as const;

/** Exact `unaccounted` strings (§1.12): why the counters may fall short of the real spend. */
export const UNACCOUNTED = {
  noUsage: "the child's result carries no usage",
  noResult: 'the child left no result',
  malformed: 'the result file is malformed',
  unreadable: 'the result file is unreadable',
} as const;

export const terminalTypeSchema = z.enum([
  'captured',
  'no_report',
  'max_steps',
  'context_yield',
  'timed_out',
  'failed',
]);
export type TerminalType = z.infer<typeof terminalTypeSchema>;

/** How one launch ended. `reason` is present exactly when `type` is `failed`. */
export const terminalSchema = z.object({ type: terminalTypeSchema, reason: z.string().optional() });
export type Terminal = z.infer<typeof terminalSchema>;

/**
 * The account of one launch. `report` is an own property (possibly null) exactly when
 * `terminal.type === 'captured'`. `usage` is the child's whole validated usage when it gave one
 * (an addition to the reference's fields, for callers that keep cache counters).
 */
export const contractRunResultSchema = z.object({
  terminal: terminalSchema,
  report: z.unknown().optional(),
  stepsUsed: z.number(),
  promptTokens: z.number(),
  completionTokens: z.number(),
  costUsd: z.number().optional(),
  unaccounted: z.string().optional(),
  exitCode: z.number().optional(),
  usage: usageSchema.optional(),
  /**
   * The reason a `context_yield` result gave (an addition to the reference's fields: the terminal
   * keeps the reference's shape, and the reason reaches the process's outcome).
   */
  yieldReason: z.string().optional(),
});
export type ContractRunResult = z.infer<typeof contractRunResultSchema>;

/** What reading the result file after teardown found. */
export type ResultFileEvidence =
  | { kind: 'missing' }
  | { kind: 'unreadable'; error: string }
  | { kind: 'contents'; text: string | Uint8Array };

/** Everything the runner observed about one launch, in the terms classification needs. */
export type LaunchEvidence =
  | { launched: false; failure?: string }
  | {
      launched: true;
      requestId: string;
      /** The wall deadline elapsed before the request was written and stdout reached EOF. */
      timedOut: boolean;
      /** The first stream or runner failure text (`child stream failed: …`), if any. */
      runnerFailure?: string;
      file: ResultFileEvidence;
      /** The exit status, when it was collected in time. */
      exitCode?: number;
    };

const ZERO = { stepsUsed: 0, promptTokens: 0, completionTokens: 0 } as const;

/** Classifies one launch into its terminal and counters (reference §1.10–§1.12). */
export function classifyLaunch(evidence: LaunchEvidence): ContractRunResult {
  if (!evidence.launched) {
    return { terminal: { type: 'failed', reason: evidence.failure ?? TEXTS.notLaunched }, ...ZERO };
  }
  const exit = evidence.exitCode === undefined ? {} : { exitCode: evidence.exitCode };
  // No usable result: the deadline wins, then a runner failure, then what was wrong with the file.
  const unusable = (reason: string, unaccounted: string): ContractRunResult => {
    const terminal: Terminal = evidence.timedOut
      ? { type: 'timed_out' }
      : { type: 'failed', reason: evidence.runnerFailure ?? reason };
    return { terminal, ...ZERO, unaccounted, ...exit };
  };
  const file = evidence.file;
  if (file.kind === 'missing') return unusable(TEXTS.noResult(evidence.exitCode), UNACCOUNTED.noResult);
  if (file.kind === 'unreadable') return unusable(TEXTS.unreadable(file.error), UNACCOUNTED.unreadable);
  const decoded = decodeResultFile(file.text, evidence.requestId);
  if (!decoded.ok) return unusable(TEXTS.malformed(decoded.problem), UNACCOUNTED.malformed);

  const ending = decoded.result;
  const counters = accountOf(ending.usage, ending.steps);
  if (ending.status === 'completed') {
    return { terminal: { type: 'captured' }, report: ending.output, ...counters, ...exit };
  }
  const terminal: Terminal = evidence.timedOut ? { type: 'timed_out' } : terminalOf(ending);
  const yielded =
    terminal.type === 'context_yield' && 'reason' in ending ? { yieldReason: ending.reason } : {};
  return { terminal, ...counters, ...exit, ...yielded };
}

function accountOf(usage: Usage | undefined, steps: number | undefined) {
  const stepsUsed = steps ?? 0;
  if (usage === undefined) {
    return { stepsUsed, promptTokens: 0, completionTokens: 0, unaccounted: UNACCOUNTED.noUsage };
  }
  return {
    stepsUsed,
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
    ...(usage.cost_usd === undefined ? {} : { costUsd: usage.cost_usd }),
    usage,
  };
}

function terminalOf(ending: Exclude<ChildEnding, { status: 'completed' }>): Terminal {
  switch (ending.status) {
    case 'no_report':
      return { type: 'no_report' };
    case 'max_steps_exhausted':
      return { type: 'max_steps' };
    case 'context_yield':
      return { type: 'context_yield' };
    case 'aborted':
      return { type: 'failed', reason: `aborted: ${ending.reason}` };
    case 'interrupted':
      return { type: 'failed', reason: `interrupted: ${ending.reason}` };
    case 'failed':
      return { type: 'failed', reason: ending.reason };
  }
}
