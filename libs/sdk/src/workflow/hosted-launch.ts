// One hosted launch as a libos child: what `hosted-child.js` (the bridge a libos worker names in
// `WORKFLOW_HOST`, see handoff.ts) runs for each request.
import type { ChildEnding, ContractRequest } from '@libos/contract';
import { fromEnv } from '../client/from-env.js';
import { clusterRunner } from './cluster-runner.js';
import type { Json } from './json.js';
import type { AgentAttempt, AgentOutcome } from './types.js';

/** The contract ending that says what the libos child's outcome says. */
export function endingOf(outcome: AgentOutcome): ChildEnding {
  const attempt = outcome.attempt;
  const account = attempt === undefined ? {} : accountOf(attempt);
  if (outcome.type === 'Finished') return { status: 'completed', output: outcome.value, ...account };
  const { failure } = outcome;
  switch (failure.type) {
    case 'NoReport':
      return { status: 'no_report', ...account };
    case 'MaxSteps':
      return { status: 'max_steps_exhausted', ...account };
    case 'ContextYield':
      return {
        status: 'context_yield',
        reason: 'the libos child yielded at the context ceiling',
        ...account,
      };
    case 'TimedOut':
      return { status: 'failed', reason: 'the libos child timed out', ...account };
    case 'Skipped':
      return { status: 'failed', reason: 'the libos child was skipped', ...account };
    case 'Failed':
      return { status: 'failed', reason: failure.reason, ...account };
  }
}

/** Usage only when the kernel accounted it (an unknown spend is omitted, never zero). */
function accountOf(attempt: AgentAttempt): Pick<ChildEnding, 'usage' | 'steps'> {
  if (attempt.unaccounted !== undefined) return { steps: attempt.stepsUsed };
  const { promptTokens: prompt, completionTokens: completion } = attempt;
  return {
    steps: attempt.stepsUsed,
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      prompt_cache_hit_tokens: 0,
      prompt_cache_miss_tokens: prompt,
      ...(attempt.costUsd !== undefined && { cost_usd: attempt.costUsd }),
    },
  };
}

/** Runs one request as a libos child of this process; a stdin EOF cancels that child. */
export async function hostedLaunch(
  request: ContractRequest,
  signal: AbortSignal,
  say: (line: string) => void,
): Promise<ChildEnding> {
  const runner = clusterRunner({ client: fromEnv() });
  const call = {
    kind: request.kind,
    input: request.input as Json,
    label: '',
    scope: '',
    ...(request.limits !== undefined && { maxSteps: request.limits.max_steps }),
    ...(request.schema !== undefined && { schema: request.schema as Json }),
  };
  let outcome: AgentOutcome;
  try {
    outcome = await runner.run(call, signal);
  } catch (error) {
    if (!signal.aborted) throw error;
    return { status: 'interrupted', reason: 'the parent closed stdin' };
  }
  // The join key between the host's child id and the libos process.
  if (outcome.attempt !== undefined) say(`${request.request_id} ran as libos ${outcome.attempt.attemptId}`);
  return endingOf(outcome);
}
