import type { z } from 'zod';
import { brief } from './brief.js';
import { abortReason, effectiveSignal } from './cancellation.js';
import { AgentFailed, CallBudgetExhausted } from './errors.js';
import type { Journal } from './journal/journal.js';
import { type Json, jsonSchema } from './json.js';
import { Semaphore } from './semaphore.js';
import {
  type AgentCall,
  type AgentDisposition,
  AgentFailure,
  type AgentOutcome,
  type Runner,
  type WorkflowEvent,
} from './types.js';

export interface WorkflowOptions {
  readonly runner: Runner;
  /** Live runner invocations at once (default 8). */
  readonly maxConcurrent?: number;
  /** Live runner invocations in total; omitted = unlimited, 0 = replay only. */
  readonly maxCalls?: number;
  /** Where live outcomes are recorded and earlier generations are replayed from. */
  readonly journal?: Journal;
  /** Part of every call's work identity: keeps programs that share a journal apart. */
  readonly replayScope?: string;
  /** Called synchronously for every event; it must not throw. */
  readonly onEvent?: (event: WorkflowEvent) => void;
}

export interface AgentOptions {
  readonly prompt: string;
  readonly kind: string;
  readonly hints?: string;
  /** Default: `brief(prompt)`. */
  readonly label?: string;
  readonly maxSteps?: number;
  readonly schema?: Json;
  /** Joined with the enclosing combinator's signal, if any. */
  readonly signal?: AbortSignal;
}

export interface AgentCallOptions {
  readonly kind: string;
  readonly input: Json;
  readonly label: string;
  readonly maxSteps?: number;
  /** A JSON `null` schema counts as no schema. */
  readonly schema?: Json;
  readonly signal?: AbortSignal;
}

/**
 * Runs agent calls through a runner with a concurrency limit, a launch allowance, accounting,
 * events, and a journal that lets a re-run of the same program replay what already finished.
 * There is deliberately no token budget and no wall deadline here: those belong to runners.
 */
export class Workflow {
  readonly #runner: Runner;
  readonly #slots: Semaphore;
  readonly #maxCalls: number | undefined;
  readonly #journal: Journal | undefined;
  readonly #scope: string;
  readonly #onEvent: (event: WorkflowEvent) => void;
  #callsMade = 0;
  #replays = 0;
  #promptTokens = 0;
  #completionTokens = 0;
  #costUsd = 0;
  #phase: string | undefined;

  constructor(options: WorkflowOptions) {
    const maxConcurrent = options.maxConcurrent ?? 8;
    if (!(maxConcurrent >= 1)) throw new Error('Workflow: max_concurrent must be at least 1');
    if (options.maxCalls !== undefined && !(options.maxCalls >= 0)) {
      throw new Error('Workflow: max_calls must not be negative');
    }
    this.#runner = options.runner;
    this.#slots = new Semaphore(maxConcurrent);
    this.#maxCalls = options.maxCalls;
    this.#journal = options.journal;
    this.#scope = options.replayScope ?? '';
    this.#onEvent = options.onEvent ?? (() => {});
  }

  /** Live runner invocations: in flight, resolved, or refused by the runner; never replays. */
  callsMade(): number {
    return this.#callsMade;
  }

  callsReplayed(): number {
    return this.#replays;
  }

  /** Prompt + completion tokens of resolved live outcomes, successful or not. */
  tokensSpent(): number {
    return this.#promptTokens + this.#completionTokens;
  }

  /** The sum of the prices engines stated: a floor when some engines price nothing. */
  costUsd(): number {
    return this.#costUsd;
  }

  phase(title: string): void {
    this.#phase = title;
    this.#emit({ type: 'PhaseStarted', title });
  }

  log(message: string): void {
    this.#emit({ type: 'Log', message });
  }

  /** Ask an agent: input `{query}` or `{query, hints}`, labelled `brief(prompt)` unless given. */
  agent(options: AgentOptions): Promise<Json> {
    const input: Json =
      options.hints === undefined
        ? { query: options.prompt }
        : { query: options.prompt, hints: options.hints };
    return this.agentCall({
      kind: options.kind,
      input,
      label: options.label ?? brief(options.prompt),
      ...(options.maxSteps !== undefined && { maxSteps: options.maxSteps }),
      ...(options.schema !== undefined && { schema: options.schema }),
      ...(options.signal !== undefined && { signal: options.signal }),
    });
  }

  /**
   * `agent`, then decode the whole report with `decoder`. The raw report is journaled before
   * decoding, so a rejected report replays as the same rejection.
   */
  async agentAs<S extends z.ZodType>(decoder: S, options: AgentOptions): Promise<z.output<S>> {
    const label = options.label ?? brief(options.prompt);
    const report = await this.agent({ ...options, label });
    const decoded = await decoder.safeParseAsync(report);
    if (decoded.success) return decoded.data;
    throw new AgentFailed(label, AgentFailure.Failed(`report rejected: ${describeIssues(decoded.error)}`));
  }

  /** One agent call: replay from the journal if it can, else a live launch. Resolves to the report. */
  async agentCall(options: AgentCallOptions): Promise<Json> {
    const phase = this.#phase; // invocation time, not launch time
    const call: AgentCall = {
      kind: options.kind,
      input: options.input,
      label: options.label,
      ...(options.maxSteps !== undefined && { maxSteps: options.maxSteps }),
      scope: this.#scope,
      ...(options.schema != null && { schema: options.schema }),
    };
    const signal = effectiveSignal(options.signal);
    signal?.throwIfAborted();

    const replayed = await this.#replay(call, signal);
    if (replayed !== undefined) {
      this.#replays += 1;
      return this.#settle(call.label, replayed, 'AgentReplayed');
    }

    await this.#slots.acquire(signal);
    let outcome: AgentOutcome;
    try {
      if (signal?.aborted) throw abortReason(signal);
      if (this.#maxCalls !== undefined && this.#callsMade >= this.#maxCalls) {
        throw new CallBudgetExhausted(call.label);
      }
      this.#callsMade += 1; // before the runner: a runner that refuses still spent a call
      this.#emit({
        type: 'AgentStarted',
        label: call.label,
        kind: call.kind,
        ...(phase !== undefined && { phase }),
      });
      try {
        outcome = await this.#live(call, phase, signal);
      } catch (error) {
        const disposition: AgentDisposition = signal?.aborted ? 'Interrupted' : 'Errored';
        this.#emit({ type: 'AgentFinished', label: call.label, disposition });
        throw error;
      }
    } finally {
      this.#slots.release();
    }
    return this.#settle(call.label, outcome, 'AgentFinished');
  }

  /** Claim journal candidates until one is served; `undefined` when the call must run live. */
  async #replay(call: AgentCall, signal: AbortSignal | undefined): Promise<AgentOutcome | undefined> {
    if (this.#journal === undefined) return undefined;
    for (;;) {
      const claim = this.#journal.claim(call);
      if (claim === undefined) return undefined;
      const candidate = claim.entry.outcome;
      try {
        const decision = this.#runner.validateReplay
          ? await this.#runner.validateReplay(call, candidate)
          : { type: 'Serve' as const, outcome: candidate };
        signal?.throwIfAborted();
        if (decision.type === 'Serve') return decision.outcome;
        // Rerun: the vetoed candidate stays consumed, so a stale generation cannot mask a later one.
      } catch (error) {
        claim.release();
        throw error;
      }
    }
  }

  async #live(
    call: AgentCall,
    phase: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<AgentOutcome> {
    const startedAt = Date.now();
    const outcome = await this.#runner.run(call, signal);
    const finishedAt = Date.now();
    if (outcome.attempt !== undefined) {
      this.#promptTokens += outcome.attempt.promptTokens;
      this.#completionTokens += outcome.attempt.completionTokens;
      if (outcome.attempt.costUsd !== undefined) this.#costUsd += outcome.attempt.costUsd;
    }
    if (outcome.type === 'Finished' && !jsonSchema.safeParse(outcome.value).success) {
      // Journaled, it would read back as a corrupt line on resume.
      throw new TypeError(`runner returned a report for agent '${call.label}' that is not JSON`);
    }
    await this.#journal?.append({
      call,
      outcome,
      ...(phase !== undefined && { phase }),
      startedAt,
      finishedAt,
    });
    return outcome;
  }

  #settle(label: string, outcome: AgentOutcome, type: 'AgentFinished' | 'AgentReplayed'): Json {
    if (outcome.type === 'Finished') {
      this.#emit({ type, label, disposition: 'Succeeded' });
      return outcome.value;
    }
    this.#emit({ type, label, disposition: 'FailedAgent' });
    throw new AgentFailed(label, outcome.failure);
  }

  #emit(event: WorkflowEvent): void {
    this.#onEvent(event);
  }
}

/** A decoder error with paths, e.g. `$.answer: Invalid input: expected string, received number`. */
function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${jsonPath(issue.path)}: ${issue.message}`).join('; ');
}

function jsonPath(path: readonly PropertyKey[]): string {
  return path
    .map((key) => {
      if (typeof key === 'number') return `[${key}]`;
      const name = String(key);
      return /^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`;
    })
    .reduce((acc, part) => acc + part, '$');
}
