import type { BudgetRequest, CapabilityInput, Outcome, ToolArgs, ToolResult } from '@libos/protocol';
import { LibosError } from '../client/errors.js';
import { isRetryable, sleep } from '../client/http.js';
import type { ProcessClient } from '../client/process-client.js';
import { abortReason } from './cancellation.js';
import { type AgentAttempt, type AgentCall, AgentFailure, AgentOutcome, type Runner } from './types.js';

export interface ClusterRunnerOptions {
  /** The process every child is spawned under: a root made by an operator, or `fromEnv()` in a child. */
  readonly client: ProcessClient;
  /** The image a call's kind runs on (default: the image named after the kind). */
  readonly image?: (kind: string) => string;
  /** The child's budget; `steps` is overridden by the call's `maxSteps`. Omitted: attenuated from the parent. */
  readonly budget?: (call: AgentCall) => BudgetRequest;
  /** Grants the parent delegates to every child (`inherit_capabilities`). */
  readonly capabilities?: readonly CapabilityInput[];
  readonly validateReplay?: Runner['validateReplay'];
}

/** Why an outcome's counters may fall short when the kernel recorded no usage for it. */
export const NO_USAGE = 'the process outcome carries no usage';
/**
 * The child's request has no field a spawn could fill with a schema (see the README): a call that
 * asks for one is refused rather than run unconstrained.
 */

const GOAL_MAX = 65_536;

/**
 * A Runner that runs each live call as a direct child of the process `client` acts as: spawn on
 * the kind's image, a blocking wait (re-polled across long-poll windows and coordinator
 * restarts), the result object read when it exited. Outcomes map as `contractRunner`'s do, with
 * the kernel's attempt id (`<pid>:<attempt>`) and the usage it charged. Cancelling the signal
 * cancels the child through the coordinator and rejects with the signal's reason.
 */
export function clusterRunner(options: ClusterRunnerOptions): Runner {
  const { client } = options;
  return {
    async run(call, signal) {
      signal?.throwIfAborted();
      let child: ToolResult<'spawn_child_process'>;
      try {
        // No signal here: a spawn that reached the coordinator must be known, so it can be cancelled.
        child = await client.spawn(spawnArgs(call, options));
      } catch (error) {
        if (error instanceof LibosError) {
          // A lost answer may hide a spawn that happened: that child runs unwatched.
          const verb = error.code === 'transport' ? 'failed' : 'refused';
          return AgentOutcome.didNotFinish(AgentFailure.Failed(`spawn ${verb}: ${error.message}`));
        }
        throw error;
      }
      try {
        const done = await client.wait({ child_pid: child.pid }, { signal });
        return await settle(client, done, signal);
      } catch (error) {
        if (signal?.aborted) {
          await cancel(client, child.pid);
          throw abortReason(signal);
        }
        if (error instanceof LibosError) {
          return AgentOutcome.didNotFinish(AgentFailure.Failed(`wait refused: ${error.message}`), {
            ...noCounters(child.pid),
            unaccounted: NO_USAGE,
          });
        }
        throw error;
      }
    },
    ...(options.validateReplay !== undefined && { validateReplay: options.validateReplay }),
  };
}

function spawnArgs(call: AgentCall, options: ClusterRunnerOptions): ToolArgs<'spawn_child_process'> {
  const budget = {
    ...options.budget?.(call),
    ...(call.maxSteps !== undefined && { steps: call.maxSteps }),
  };
  // A call's schema rides to the child's request (the contract's schemas are JSON objects).
  const { schema } = call;
  const objectSchema =
    typeof schema === 'object' && schema !== null && !Array.isArray(schema) ? schema : undefined;
  return {
    goal: goalOf(call),
    image: options.image?.(call.kind) ?? call.kind,
    input: call.input,
    ...(objectSchema !== undefined && { schema: objectSchema }),
    ...(Object.keys(budget).length > 0 && { resource_budget: budget }),
    ...(options.capabilities !== undefined && { inherit_capabilities: [...options.capabilities] }),
  };
}

/** The label, else the `query` of an `agent` call's input, else the kind: a goal is never empty. */
function goalOf(call: AgentCall): string {
  const { input } = call;
  const query =
    typeof input === 'object' && input !== null && !Array.isArray(input) && typeof input.query === 'string'
      ? input.query
      : '';
  return (call.label || query || call.kind).slice(0, GOAL_MAX);
}

/** A terminal child's wait answer as an AgentOutcome; a completed child's result object is read. */
async function settle(
  client: ProcessClient,
  done: ToolResult<'wait_child_process'>,
  signal: AbortSignal | undefined,
): Promise<AgentOutcome> {
  const { outcome } = done;
  if (outcome === null) {
    return AgentOutcome.didNotFinish(
      AgentFailure.Failed(`the child ended ${done.status} without an outcome`),
      {
        ...noCounters(done.child_pid),
        unaccounted: NO_USAGE,
      },
    );
  }
  const attempt = attemptOf(outcome);
  if (outcome.type !== 'completed') return AgentOutcome.didNotFinish(failureOf(outcome), attempt);
  if (done.result_withheld !== null) {
    return AgentOutcome.didNotFinish(
      AgentFailure.Failed(`the result was withheld (${done.result_withheld})`),
      attempt,
    );
  }
  if (done.result_oid === null) {
    return AgentOutcome.didNotFinish(AgentFailure.Failed('captured terminal without a report'), attempt);
  }
  try {
    const result = await readResult(client, done.result_oid, signal);
    return AgentOutcome.finished(result.payload, attempt);
  } catch (error) {
    if (!(error instanceof LibosError)) throw error;
    return AgentOutcome.didNotFinish(
      AgentFailure.Failed(`the result could not be read: ${error.message}`),
      attempt,
    );
  }
}

/** A read changes nothing, so a coordinator out of reach (restarting, say) is asked again, as a wait is. */
async function readResult(client: ProcessClient, oid: string, signal: AbortSignal | undefined) {
  for (let failures = 0; ; failures += 1) {
    try {
      return await client.readObject({ oid }, { signal });
    } catch (error) {
      if (!isRetryable(error) || signal?.aborted) throw error;
      await sleep(Math.min(2_000, 50 * 2 ** failures), signal);
    }
  }
}

/** The failure a non-completed outcome is, named as `contractRunner` names the same terminal. */
export function failureOf(outcome: Outcome): AgentFailure {
  switch (outcome.type) {
    case 'no_report':
      return AgentFailure.NoReport;
    case 'max_steps_exhausted':
      return AgentFailure.MaxSteps;
    case 'context_yield':
      return AgentFailure.ContextYield;
    case 'timed_out':
      return AgentFailure.TimedOut;
    case 'killed':
      return AgentFailure.Failed(outcome.reason ? `killed: ${outcome.reason}` : 'killed');
    case 'failed':
      return AgentFailure.Failed(outcome.reason ?? 'failed');
    case 'completed':
      return AgentFailure.Failed('captured terminal without a report');
  }
}

/** The attempt as the kernel accounted it: its id, and the usage the worker charged. */
export function attemptOf(outcome: Outcome): AgentAttempt {
  const { usage } = outcome;
  const unaccounted = outcome.unaccounted ?? (usage === undefined ? NO_USAGE : undefined);
  return {
    attemptId: outcome.attempt_id,
    stepsUsed: outcome.steps ?? usage?.steps ?? 0,
    promptTokens: usage?.prompt_tokens ?? 0,
    completionTokens: usage?.completion_tokens ?? 0,
    ...(usage?.cost_usd !== undefined && { costUsd: usage.cost_usd }),
    ...(unaccounted !== undefined && { unaccounted }),
  };
}

function noCounters(attemptId: string): AgentAttempt {
  return { attemptId, stepsUsed: 0, promptTokens: 0, completionTokens: 0 };
}

/** Best effort: a child that already ended, or a coordinator out of reach, leaves nothing to do. */
async function cancel(client: ProcessClient, pid: string): Promise<void> {
  try {
    await client.signal({ child_pid: pid, signal: 'cancel', reason: 'the workflow cancelled the call' });
  } catch (error) {
    if (!(error instanceof LibosError)) throw error;
  }
}
