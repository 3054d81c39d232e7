import type { ContractRunResult } from '@libos/contract';
import { type ContractRunHooks, contractRun } from '@libos/runner';
import { jsonSchema } from './json.js';
import { type AgentAttempt, type AgentCall, AgentFailure, AgentOutcome, type Runner } from './types.js';

/** How to launch one live call as a child process speaking the contract. */
export interface LaunchSpec {
  readonly command: string;
  /** Passed directly (no shell); must name `{result_file}`. */
  readonly args: readonly string[];
  /** Omitted: inherit the runner's cwd. */
  readonly cwd?: string;
  /** Overlaid on the inherited environment (credentials belong here, not in argv). */
  readonly extraEnv?: Readonly<Record<string, string>>;
  /** Overrides the runner's deadline for this launch. */
  readonly deadlineMs?: number;
}

export interface ContractRunnerOptions {
  /** Builds the launch of one live call from the whole call; replays never call it. */
  readonly launch: (call: AgentCall) => LaunchSpec | Promise<LaunchSpec>;
  /** Default 600 000 ms. */
  readonly deadlineMs?: number;
  readonly validateReplay?: Runner['validateReplay'];
  /** The children's stderr: inherited by default, never parsed. */
  readonly stderr?: ContractRunHooks['stderr'];
}

/**
 * A Runner that runs each live call as one child process under the child contract. Request ids
 * (also the attempt ids) are `cr-1`, `cr-2`, … per runner value: unique to it, not globally.
 */
export function contractRunner(options: ContractRunnerOptions): Runner {
  const deadlineMs = options.deadlineMs ?? 600_000;
  let launched = 0;
  return {
    async run(call, signal) {
      const spec = await options.launch(call);
      launched += 1;
      const id = `cr-${launched}`;
      const result = await contractRun({
        command: spec.command,
        args: [...spec.args],
        input: call.input,
        kind: call.kind,
        id,
        deadlineMs: spec.deadlineMs ?? deadlineMs,
        ...(spec.cwd !== undefined && { cwd: spec.cwd }),
        ...(spec.extraEnv !== undefined && { extraEnv: { ...spec.extraEnv } }),
        ...(call.maxSteps !== undefined && { maxSteps: call.maxSteps }),
        ...(call.schema !== undefined && { schema: call.schema }),
        ...(signal !== undefined && { signal }),
        ...(options.stderr !== undefined && { stderr: options.stderr }),
      });
      return toOutcome(id, result);
    },
    ...(options.validateReplay !== undefined && { validateReplay: options.validateReplay }),
  };
}

/** §1.13: every launch is an attempt, even one that failed before a child started. */
export function toOutcome(attemptId: string, result: ContractRunResult): AgentOutcome {
  const attempt: AgentAttempt = {
    attemptId,
    stepsUsed: result.stepsUsed,
    promptTokens: result.promptTokens,
    completionTokens: result.completionTokens,
    ...(result.costUsd !== undefined && { costUsd: result.costUsd }),
    ...(result.unaccounted !== undefined && { unaccounted: result.unaccounted }),
  };
  const { terminal } = result;
  switch (terminal.type) {
    case 'captured': {
      const report = jsonSchema.safeParse(result.report);
      if (!Object.hasOwn(result, 'report') || !report.success) {
        return AgentOutcome.didNotFinish(AgentFailure.Failed('captured terminal without a report'), attempt);
      }
      return AgentOutcome.finished(report.data, attempt);
    }
    case 'no_report':
      return AgentOutcome.didNotFinish(AgentFailure.NoReport, attempt);
    case 'max_steps':
      return AgentOutcome.didNotFinish(AgentFailure.MaxSteps, attempt);
    case 'context_yield':
      return AgentOutcome.didNotFinish(AgentFailure.ContextYield, attempt);
    case 'timed_out':
      return AgentOutcome.didNotFinish(AgentFailure.TimedOut, attempt);
    case 'failed':
      return AgentOutcome.didNotFinish(AgentFailure.Failed(terminal.reason ?? ''), attempt);
  }
}
