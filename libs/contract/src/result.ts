import { z } from 'zod';
import { hasKey, isJsonObject } from './json.js';
import { stepsSchema, usageDocument, usageSchema } from './usage.js';

export const resultStatusSchema = z.enum([
  'completed',
  'no_report',
  'max_steps_exhausted',
  'context_yield',
  'aborted',
  'interrupted',
  'failed',
]);
export type ResultStatus = z.infer<typeof resultStatusSchema>;

/** The statuses whose result must carry a string `reason`. */
const REASONED = ['context_yield', 'aborted', 'interrupted', 'failed'] as const;

const accounting = { usage: usageSchema.optional(), steps: stepsSchema.optional() };

/**
 * How a child's run ended, as the child states it in its result file. This is both what a
 * `serveChild` handler returns and what `decodeResultFile` yields.
 */
export const childEndingSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('completed'), output: z.unknown(), ...accounting }),
  z.object({ status: z.enum(['no_report', 'max_steps_exhausted']), ...accounting }),
  z.object({ status: z.enum(REASONED), reason: z.string(), ...accounting }),
]);
export type ChildEnding = z.infer<typeof childEndingSchema>;

/** A result file that passed every check of §1.10, as the ending it states. */
export type DecodedResult = ChildEnding;

/**
 * The result document (reference §3.1 "Result document"), keys in order: version, request_id,
 * status, then output (completed) or reason, then usage and steps when known. An undefined
 * output is written as null, since a completed result without an `output` key is malformed.
 */
export function resultDocument(requestId: string, ending: ChildEnding): Record<string, unknown> {
  const doc: Record<string, unknown> = { version: 1, request_id: requestId, status: ending.status };
  if (ending.status === 'completed') doc.output = ending.output === undefined ? null : ending.output;
  else if ('reason' in ending) doc.reason = ending.reason;
  if (ending.usage !== undefined) doc.usage = usageDocument(ending.usage);
  if (ending.steps !== undefined) doc.steps = ending.steps;
  return doc;
}

export type DecodeOutcome = { ok: true; result: DecodedResult } | { ok: false; problem: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes a result file in the reference's check order (§1.10 steps 1–11). A failure's
 * `problem` is the bare text (`not a JSON object`, `answers request test-9, not test-1`, …);
 * the runner reports it as `malformed result file: <problem>`. Bytes must be UTF-8.
 */
export function decodeResultFile(text: string | Uint8Array, requestId: string): DecodeOutcome {
  const fail = (problem: string): DecodeOutcome => ({ ok: false, problem });
  let value: unknown;
  try {
    value = JSON.parse(typeof text === 'string' ? text : utf8.decode(text));
  } catch (error) {
    return fail(`not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!isJsonObject(value)) return fail('not a JSON object');
  if (value.version !== 1) return fail('not a version 1 result');
  const theirs = value.request_id;
  if (typeof theirs !== 'string') return fail('no request_id');
  if (theirs !== requestId) return fail(`answers request ${theirs}, not ${requestId}`);
  const status = value.status;
  if (typeof status !== 'string') return fail('no status');

  let ending: DecodedResult;
  if (status === 'completed') {
    if (!hasKey(value, 'output')) return fail('a completed result without output');
    ending = { status, output: value.output };
  } else if (status === 'no_report' || status === 'max_steps_exhausted') {
    ending = { status };
  } else if (isReasoned(status)) {
    if (typeof value.reason !== 'string') return fail(`a ${status} result without a reason`);
    ending = { status, reason: value.reason };
  } else {
    return fail(`unknown status ${status}`);
  }

  if (hasKey(value, 'usage')) {
    const usage = usageSchema.safeParse(value.usage);
    if (!usage.success) return fail('malformed usage');
    ending.usage = usage.data;
  }
  if (hasKey(value, 'steps')) {
    const steps = stepsSchema.safeParse(value.steps);
    if (!steps.success) return fail('malformed steps');
    ending.steps = steps.data;
  }
  return { ok: true, result: ending };
}

function isReasoned(status: string): status is (typeof REASONED)[number] {
  return (REASONED as readonly string[]).includes(status);
}
