import type { BudgetRequest, CapabilityInput, Outcome, ToolArgs, ToolResult } from '@libos/protocol';
import { onAbort } from '../client/abort-listener.js';
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
  /**
   * Calls that start in the same turn of the event loop (a `fanOut`, a `parallel`) are spawned
   * with one `spawn_children` call of at most this many children (default 100; 1 spawns each
   * alone) and waited for with `wait_children` over the batch.
   */
  readonly spawnBatchMax?: number;
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
 * restarts), the result object read when it exited. Calls started together (`fanOut`,
 * `parallel`) share one `spawn_children` and one `wait_children` loop (see `spawnBatchMax`). Outcomes map as `contractRunner`'s do, with
 * the kernel's attempt id (`<pid>:<attempt>`) and the usage it charged. Cancelling the signal
 * cancels the child through the coordinator and rejects with the signal's reason.
 */
export function clusterRunner(options: ClusterRunnerOptions): Runner {
  const { client } = options;
  const spawner = new BatchSpawner(client, Math.max(1, options.spawnBatchMax ?? 100));
  return {
    async run(call, signal) {
      signal?.throwIfAborted();
      let child: ToolResult<'spawn_child_process'>;
      let waiter: BatchWaiter;
      try {
        // No signal here: a spawn that reached the coordinator must be known, so it can be cancelled.
        ({ child, waiter } = await spawner.spawn(spawnArgs(call, options)));
      } catch (error) {
        if (error instanceof LibosError) {
          // A lost answer may hide a spawn that happened: that child runs unwatched.
          const verb = error.code === 'transport' ? 'failed' : 'refused';
          return AgentOutcome.didNotFinish(AgentFailure.Failed(`spawn ${verb}: ${error.message}`));
        }
        throw error;
      }
      try {
        const done = await waiter.wait(child.pid, signal);
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

type SpawnArgs = ToolArgs<'spawn_child_process'>;
type WaitAnswer = ToolResult<'wait_child_process'>;

interface PendingSpawn {
  readonly args: SpawnArgs;
  readonly resolve: (spawned: { child: ToolResult<'spawn_child_process'>; waiter: BatchWaiter }) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Gathers the spawns asked for in one turn of the event loop into `spawn_children` calls. The
 * batch is all or nothing: an entry the kernel refuses (`details.index`) is refused alone and
 * the rest is asked again, so each call meets the refusal it would have met by itself.
 */
class BatchSpawner {
  #pending: PendingSpawn[] = [];

  constructor(
    private readonly client: ProcessClient,
    private readonly max: number,
  ) {}

  spawn(args: SpawnArgs): Promise<{ child: ToolResult<'spawn_child_process'>; waiter: BatchWaiter }> {
    return new Promise((resolve, reject) => {
      if (this.#pending.length === 0) setImmediate(() => this.#flush());
      this.#pending.push({ args, resolve, reject });
    });
  }

  #flush(): void {
    const pending = this.#pending;
    this.#pending = [];
    for (let i = 0; i < pending.length; i += this.max) void this.#send(pending.slice(i, i + this.max));
  }

  async #send(batch: PendingSpawn[]): Promise<void> {
    if (batch.length === 1) {
      const [only] = batch as [PendingSpawn];
      try {
        const child = await this.client.spawn(only.args);
        only.resolve({ child, waiter: new BatchWaiter(this.client, [child.pid]) });
      } catch (error) {
        only.reject(error);
      }
      return;
    }
    let spawned: ToolResult<'spawn_children'>;
    try {
      spawned = await this.client.spawnChildren({ children: batch.map((one) => one.args) });
    } catch (error) {
      const index = error instanceof LibosError ? error.details?.index : undefined;
      if (typeof index === 'number' && Number.isInteger(index) && batch[index] !== undefined) {
        batch[index].reject(error);
        await this.#send(batch.filter((_, i) => i !== index));
        return;
      }
      for (const one of batch) one.reject(error);
      return;
    }
    const waiter = new BatchWaiter(
      this.client,
      spawned.children.map((child) => child.pid),
    );
    for (const [i, one] of batch.entries()) {
      const child = spawned.children[i];
      if (child) one.resolve({ child, waiter });
      else one.reject(new Error('spawn_children answered fewer children than asked'));
    }
  }
}

/**
 * The children of one batch, waited for together: one `wait_children` (mode any) at a time over
 * those still wanted, answering each call as its child ends. One child alone is a plain wait.
 */
class BatchWaiter {
  readonly #waiting = new Map<
    string,
    { resolve: (done: WaitAnswer) => void; reject: (e: unknown) => void }
  >();
  readonly #ended = new Map<string, WaitAnswer>();
  readonly #abandoned = new Set<string>();
  readonly #stop = new AbortController();
  #failure: { error: unknown } | undefined;
  #looping = false;

  constructor(
    private readonly client: ProcessClient,
    private readonly pids: readonly string[],
  ) {}

  wait(pid: string, signal: AbortSignal | undefined): Promise<WaitAnswer> {
    if (this.pids.length === 1) return this.client.wait({ child_pid: pid }, { signal });
    const ended = this.#ended.get(pid);
    if (ended) return Promise.resolve(ended);
    if (this.#failure) return Promise.reject(this.#failure.error);
    return new Promise((resolve, reject) => {
      const abandon = () => {
        this.#waiting.delete(pid);
        this.#abandoned.add(pid);
        if (this.pids.every((p) => this.#abandoned.has(p) || this.#ended.has(p))) this.#stop.abort();
        reject(signal?.reason);
      };
      if (signal?.aborted) return abandon();
      const stopListening = onAbort(signal, abandon);
      this.#waiting.set(pid, {
        resolve: (done) => {
          stopListening();
          resolve(done);
        },
        reject: (error) => {
          stopListening();
          reject(error);
        },
      });
      if (!this.#looping) {
        this.#looping = true;
        // Every call of the batch registers in this turn; the loop starts after them.
        setImmediate(() => void this.#loop());
      }
    });
  }

  async #loop(): Promise<void> {
    for (;;) {
      const wanted = this.pids.filter((pid) => !this.#ended.has(pid) && !this.#abandoned.has(pid));
      if (wanted.length === 0) return;
      let answer: ToolResult<'wait_children'>;
      try {
        answer = await this.client.waitChildren({ child_pids: wanted }, { signal: this.#stop.signal });
      } catch (error) {
        if (this.#stop.signal.aborted) return;
        this.#failure = { error };
        for (const [pid, waiter] of this.#waiting) {
          this.#waiting.delete(pid);
          waiter.reject(error);
        }
        return;
      }
      for (const one of answer.children) {
        if (!one.ready) continue;
        this.#ended.set(one.child_pid, one);
        const waiter = this.#waiting.get(one.child_pid);
        this.#waiting.delete(one.child_pid);
        waiter?.resolve(one);
      }
    }
  }
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
