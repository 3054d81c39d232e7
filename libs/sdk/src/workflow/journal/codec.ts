import { z } from 'zod';
import { jsonSchema } from '../json.js';
import type { AgentAttempt, AgentCall, AgentFailure, AgentOutcome } from '../types.js';
import type { JournalEntry } from './entry.js';

// The wire shapes are the reference's (snake_case fields, enums as `[constructor, fields]` arrays),
// so a journal written here and one written by the reference read alike. `null` reads as absent.

const whole = z.int();

const attemptWire = z
  .object({
    attempt_id: z.string(),
    steps_used: whole,
    prompt_tokens: whole,
    completion_tokens: whole,
    cost_usd: z.number().nullish(),
    unaccounted: z.string().nullish(),
  })
  .transform(
    (w): AgentAttempt => ({
      attemptId: w.attempt_id,
      stepsUsed: w.steps_used,
      promptTokens: w.prompt_tokens,
      completionTokens: w.completion_tokens,
      ...(w.cost_usd != null && { costUsd: w.cost_usd }),
      ...(w.unaccounted != null && { unaccounted: w.unaccounted }),
    }),
  );

const nullaryFailures = ['TimedOut', 'NoReport', 'MaxSteps', 'ContextYield', 'Skipped'] as const;
type NullaryFailure = (typeof nullaryFailures)[number];

const failureWire = z.union([
  z.enum(nullaryFailures).transform((type): AgentFailure => ({ type })),
  // Tolerated on read: a nullary constructor written as a one-element array.
  z.tuple([z.enum(nullaryFailures)]).transform(([type]): AgentFailure => ({ type })),
  z
    .tuple([z.literal('Failed'), z.string()])
    .transform(([, reason]): AgentFailure => ({ type: 'Failed', reason })),
]);

const outcomeWire = z.union([
  z
    .tuple([z.literal('Finished'), z.object({ value: jsonSchema, attempt: attemptWire })])
    .transform(([, f]): AgentOutcome => ({ type: 'Finished', value: f.value, attempt: f.attempt })),
  z
    .tuple([z.literal('DidNotFinish'), z.object({ failure: failureWire, attempt: attemptWire.nullish() })])
    .transform(
      ([, f]): AgentOutcome =>
        f.attempt == null
          ? { type: 'DidNotFinish', failure: f.failure }
          : { type: 'DidNotFinish', failure: f.failure, attempt: f.attempt },
    ),
]);

const callWire = z
  .object({
    kind: z.string(),
    input: jsonSchema,
    label: z.string(),
    max_steps: whole.nullish(),
    scope: z.string().nullish(),
    schema: jsonSchema.nullish(),
  })
  .transform(
    (w): AgentCall => ({
      kind: w.kind,
      input: w.input,
      label: w.label,
      ...(w.max_steps != null && { maxSteps: w.max_steps }),
      scope: w.scope ?? '',
      ...(w.schema != null && { schema: w.schema }),
    }),
  );

export const journalEntrySchema = z
  .object({
    call: callWire,
    outcome: outcomeWire,
    phase: z.string().nullish(),
    started_at: whole.nullish(),
    finished_at: whole.nullish(),
  })
  .transform(
    (w): JournalEntry => ({
      call: w.call,
      outcome: w.outcome,
      ...(w.phase != null && { phase: w.phase }),
      ...(w.started_at != null && { startedAt: w.started_at }),
      ...(w.finished_at != null && { finishedAt: w.finished_at }),
    }),
  );

function encodeAttempt(a: AgentAttempt): Record<string, unknown> {
  return {
    attempt_id: a.attemptId,
    steps_used: a.stepsUsed,
    prompt_tokens: a.promptTokens,
    completion_tokens: a.completionTokens,
    ...(a.costUsd !== undefined && { cost_usd: a.costUsd }),
    ...(a.unaccounted !== undefined && { unaccounted: a.unaccounted }),
  };
}

function encodeFailure(f: AgentFailure): NullaryFailure | ['Failed', string] {
  return f.type === 'Failed' ? ['Failed', f.reason] : f.type;
}

function encodeOutcome(o: AgentOutcome): unknown[] {
  if (o.type === 'Finished') return ['Finished', { value: o.value, attempt: encodeAttempt(o.attempt) }];
  return [
    'DidNotFinish',
    {
      failure: encodeFailure(o.failure),
      ...(o.attempt !== undefined && { attempt: encodeAttempt(o.attempt) }),
    },
  ];
}

function encodeCall(c: AgentCall): Record<string, unknown> {
  return {
    kind: c.kind,
    input: c.input,
    label: c.label,
    ...(c.maxSteps !== undefined && { max_steps: c.maxSteps }),
    scope: c.scope,
    ...(c.schema !== undefined && { schema: c.schema }),
  };
}

/** The entry's JSON document (key order: call, outcome, phase?, started_at?, finished_at?). */
export function encodeEntry(entry: JournalEntry): Record<string, unknown> {
  return {
    call: encodeCall(entry.call),
    outcome: encodeOutcome(entry.outcome),
    ...(entry.phase !== undefined && { phase: entry.phase }),
    ...(entry.startedAt !== undefined && { started_at: entry.startedAt }),
    ...(entry.finishedAt !== undefined && { finished_at: entry.finishedAt }),
  };
}

export function decodeEntry(document: unknown): JournalEntry {
  return journalEntrySchema.parse(document);
}

/** One journal line, newline included: `{"v":1,"e":<entry>}\n`. */
export function encodeJournalLine(entry: JournalEntry): string {
  return `${JSON.stringify({ v: 1, e: encodeEntry(entry) })}\n`;
}

const lineSchema = z.looseObject({ v: z.literal(1), e: z.unknown().optional() });

/**
 * Decode one line's text (already trimmed, not empty): an entry, `metadata` for a `v:1` line
 * without `e`, or a thrown error for anything else.
 */
export function decodeJournalLine(text: string): JournalEntry | 'metadata' {
  const line = lineSchema.parse(JSON.parse(text));
  if (line.e == null) return 'metadata';
  return decodeEntry(line.e);
}

/**
 * A tolerant, read-only reader (for watchers such as viz, safe on a live file): skips blank,
 * malformed, metadata and non-v1 lines, never repairs and never throws.
 */
export function readJournalEntries(text: string): JournalEntry[] {
  const entries: JournalEntry[] = [];
  for (const raw of text.split('\n')) {
    const trimmed = raw.trim();
    if (trimmed === '') continue;
    try {
      const decoded = decodeJournalLine(trimmed);
      if (decoded !== 'metadata') entries.push(decoded);
    } catch {
      // A torn or foreign line: a watcher shows what it can.
    }
  }
  return entries;
}
