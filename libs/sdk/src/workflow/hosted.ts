import { appendFile } from 'node:fs/promises';
import type { ContractRunResult } from '@libos/contract';
import { contractRun } from '@libos/runner';
import { toOutcome } from './contract-runner.js';
import { fileJournal } from './journal/file.js';
import { type Journal, memoryJournal } from './journal/journal.js';
import type { Json } from './json.js';
import { type AgentCall, AgentFailure, AgentOutcome, type Runner } from './types.js';
import { Workflow } from './workflow.js';

// `hosted` (reference §4): a host (libos's worker, for one) hands a workflow program its launch
// configuration in one environment variable, `WORKFLOW_HOST`, version 2. The program's agents then
// run as the host's children, named from a block of ids the host reserved, and at most as many
// as the block holds.

export const WORKFLOW_HOST = 'WORKFLOW_HOST';
export const HANDOFF_VERSION = 2;
export const HOSTED_DEFAULT_DEADLINE_MS = 600_000;
/** Why a cancelled launch's counters are zero (the sidecar's `unaccounted`). */
export const CANCELLED_UNACCOUNTED = 'the launch was cancelled before its result was read';

const RESERVED = [
  'v',
  'transport',
  'exe',
  'child_args',
  'child_id',
  'ids',
  'journal',
  'events',
  'cwd',
  'deadline_ms',
];

/** A `WORKFLOW_HOST` that is set but cannot be used: never silently ignored. */
export class HandoffError extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(`unusable WORKFLOW_HOST handoff: ${reason}`);
    this.name = 'HandoffError';
    this.reason = reason;
  }
}

/** What the host's sidecar gets, one JSON line per event (reference §4.2). */
export type HostedEvent =
  | { event: 'agent_started'; child: string; kind: string; label: string }
  | {
      event: 'agent_finished';
      child: string;
      status: HostedStatus;
      steps: number;
      tokens: number;
      unaccounted?: string;
    };

export type HostedStatus =
  | 'captured'
  | 'no_report'
  | 'max_steps'
  | 'context_yield'
  | 'timed_out'
  | 'failed'
  | 'skipped'
  | 'cancelled';

/** Writes one sidecar line; the default appends to the handoff's `events` file, best effort. */
export type EmitLine = (path: string | undefined, line: string) => void | Promise<void>;

interface Handoff {
  exe: string;
  childArgs: string[];
  childId: string;
  first: number;
  count: number;
  journal: string | undefined;
  events: string | undefined;
  cwd: string | undefined;
  deadlineMs: number;
  extensions: Record<string, Json>;
}

const textOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

const isPositiveInteger = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value > 0;

/** `absent`, `null` and `""` all mean "not given" for the optional paths. */
function optionalPath(doc: Record<string, unknown>, key: 'journal' | 'events' | 'cwd'): string | undefined {
  const value = doc[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new HandoffError(`\`${key}\` must be a string`);
  return value === '' ? undefined : value;
}

/** The checks of reference §4.1, in its order, with its exact reasons. */
function parseHandoff(text: string): Handoff {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    throw new HandoffError(`not JSON: ${textOf(error)}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new HandoffError('not a JSON object');
  const o = doc as Record<string, unknown>;
  if (!Object.hasOwn(o, 'v') || o.v === null) throw new HandoffError('no handoff version `v`');
  if (o.v !== HANDOFF_VERSION) {
    throw new HandoffError(
      `unsupported handoff version ${JSON.stringify(o.v)}; this release reads version ${HANDOFF_VERSION}`,
    );
  }
  if (!Object.hasOwn(o, 'transport') || o.transport === null) throw new HandoffError('no `transport`');
  if (o.transport !== 'result_file') {
    const shown = typeof o.transport === 'string' ? o.transport : JSON.stringify(o.transport);
    throw new HandoffError(`unsupported transport "${shown}"; this release reads "result_file"`);
  }
  if (typeof o.exe !== 'string' || o.exe === '') throw new HandoffError('`exe` must be a non-empty string');
  const args = o.child_args;
  if (!Array.isArray(args) || args.length === 0 || !args.every((a) => typeof a === 'string')) {
    throw new HandoffError('`child_args` must be a non-empty array of strings');
  }
  if (!args.some((a: string) => a.includes('{result_file}'))) {
    throw new HandoffError('`child_args` must name {result_file}');
  }
  if (typeof o.child_id !== 'string' || !o.child_id.includes('{n}')) {
    throw new HandoffError('`child_id` must be a string containing {n}');
  }
  const ids = o.ids;
  if (!Array.isArray(ids) || ids.length !== 2 || !isPositiveInteger(ids[0]) || !isPositiveInteger(ids[1])) {
    throw new HandoffError('`ids` must be [first, count], both positive integers');
  }
  const journal = optionalPath(o, 'journal');
  const events = optionalPath(o, 'events');
  const cwd = optionalPath(o, 'cwd');
  let deadlineMs = HOSTED_DEFAULT_DEADLINE_MS;
  if (o.deadline_ms !== undefined && o.deadline_ms !== null) {
    if (!isPositiveInteger(o.deadline_ms)) throw new HandoffError('`deadline_ms` must be a positive integer');
    deadlineMs = o.deadline_ms;
  }
  const extensions: Record<string, Json> = {};
  for (const [key, value] of Object.entries(o)) {
    if (!RESERVED.includes(key)) extensions[key] = value as Json;
  }
  return {
    exe: o.exe,
    childArgs: args as string[],
    childId: o.child_id,
    first: ids[0],
    count: ids[1],
    journal,
    events,
    cwd,
    deadlineMs,
    extensions,
  };
}

/**
 * The host's launch configuration, when this program runs hosted: `undefined` when
 * `WORKFLOW_HOST` is unset or blank (run standalone); a `HandoffError` when it is set but
 * unusable (never `undefined`: a host's launches must not silently become local ones).
 */
export function hostedContext(env: NodeJS.ProcessEnv = process.env): HostedContext | undefined {
  const text = env[WORKFLOW_HOST];
  if (text === undefined || text.trim() === '') return undefined;
  return new HostedContext(parseHandoff(text));
}

/** A parsed handoff. Made only by `hostedContext`: there is no constructor from arbitrary JSON. */
export class HostedContext {
  readonly #handoff: Handoff;

  /** @internal use `hostedContext()` */
  constructor(handoff: Handoff) {
    this.#handoff = handoff;
  }

  /** How many agents the host reserved ids for: the launch ceiling. */
  childCapacity(): number {
    return this.#handoff.count;
  }

  journalPath(): string | undefined {
    return this.#handoff.journal;
  }

  eventsPath(): string | undefined {
    return this.#handoff.events;
  }

  /** The wall deadline of each launch (default 600 000 ms). */
  deadlineMs(): number {
    return this.#handoff.deadlineMs;
  }

  /** A host extension (a top-level key the handoff does not reserve); `undefined` when absent. */
  extension(name: string): Json | undefined {
    if (RESERVED.includes(name) || !Object.hasOwn(this.#handoff.extensions, name)) return undefined;
    return this.#handoff.extensions[name];
  }

  /**
   * A Runner whose ids start at the block's first (reference §4.2): one runner per reservation,
   * since a second one would reuse the ids. Calls past the block are `Skipped` without a launch.
   */
  runner(options: { emitLine?: EmitLine } = {}): Runner {
    const h = this.#handoff;
    const emit = async (event: HostedEvent) => {
      const line = JSON.stringify(event);
      try {
        if (options.emitLine !== undefined) await options.emitLine(h.events, line);
        else if (h.events !== undefined) await appendFile(h.events, `${line}\n`);
      } catch {
        // The sidecar is best effort: a watcher's aid, not the record (the journal is).
      }
    };
    let next = h.first;
    return {
      async run(call: AgentCall, signal?: AbortSignal): Promise<AgentOutcome> {
        if (next >= h.first + h.count) return AgentOutcome.didNotFinish(AgentFailure.Skipped);
        const ordinal = next;
        next += 1;
        const child = h.childId.replaceAll('{n}', String(ordinal));
        await emit({ event: 'agent_started', child, kind: call.kind, label: call.label });
        let result: ContractRunResult;
        try {
          result = await contractRun({
            command: h.exe,
            // `{kind}` first, then `{child}`; `{result_file}` is the runner's.
            args: h.childArgs.map((a) => a.replaceAll('{kind}', call.kind).replaceAll('{child}', child)),
            input: call.input,
            kind: call.kind,
            id: child,
            deadlineMs: h.deadlineMs,
            ...(h.cwd !== undefined && { cwd: h.cwd }),
            ...(call.maxSteps !== undefined && { maxSteps: call.maxSteps }),
            ...(call.schema !== undefined && { schema: call.schema }),
            ...(signal !== undefined && { signal }),
          });
        } catch (error) {
          await emit({
            event: 'agent_finished',
            child,
            status: signal?.aborted ? 'cancelled' : 'failed',
            steps: 0,
            tokens: 0,
            unaccounted: CANCELLED_UNACCOUNTED,
          });
          throw error;
        }
        const outcome = toOutcome(child, result);
        const captured = outcome.type === 'Finished';
        const status: HostedStatus = captured ? 'captured' : sidecarStatus(outcome.failure);
        await emit({
          event: 'agent_finished',
          child,
          status,
          steps: result.stepsUsed,
          tokens: result.promptTokens + result.completionTokens,
          ...(result.unaccounted !== undefined && { unaccounted: result.unaccounted }),
        });
        if (outcome.type === 'DidNotFinish' && result.terminal.type === 'captured') {
          return AgentOutcome.didNotFinish(
            AgentFailure.Failed('captured terminal without a report value'),
            outcome.attempt,
          );
        }
        return outcome;
      },
    };
  }

  /** Runs `body` on a Workflow over `runner()` and the handoff's journal (in memory when none). */
  async run<T>(
    body: (workflow: Workflow) => Promise<T>,
    options: { maxConcurrent?: number } = {},
  ): Promise<T> {
    const path = this.#handoff.journal;
    const journal: Journal = path === undefined ? memoryJournal() : await fileJournal(path);
    const workflow = new Workflow({
      runner: this.runner(),
      maxConcurrent: options.maxConcurrent ?? 4,
      journal,
    });
    return body(workflow);
  }
}

function sidecarStatus(failure: AgentFailure): HostedStatus {
  switch (failure.type) {
    case 'NoReport':
      return 'no_report';
    case 'MaxSteps':
      return 'max_steps';
    case 'ContextYield':
      return 'context_yield';
    case 'TimedOut':
      return 'timed_out';
    case 'Skipped':
      return 'skipped';
    case 'Failed':
      return 'failed';
  }
}
