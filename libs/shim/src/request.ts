import { type ContractRequest, parseRequestLine } from '@libos/contract';
import { z } from 'zod';

/** One request as a dialect sees it: the contract request plus the prompt derived from `input`. */
export interface ShimRequest {
  request_id: string;
  kind: string;
  /** `limits.max_steps`: the ceiling the shim enforces (the CLIs have none of their own). */
  max_steps?: number;
  /** The original `input`, untouched. */
  input: unknown;
  prompt: string;
  /** The request's JSON Schema; it takes precedence over `--schema FILE`. */
  schema?: Record<string, unknown>;
}

export type ShimRequestParse =
  | { ok: true; request: ShimRequest }
  | { ok: false; problem: string; requestId?: string };

export const PROMPT_PROBLEM = '`input` needs a `query` (or `prompt`) string';

const nonBlank = z.string().refine((text) => text.trim() !== '');
const queryWithHints = z.object({ query: nonBlank, hints: nonBlank });
const query = z.object({ query: nonBlank });
const prompt = z.object({ prompt: nonBlank });

/**
 * The prompt a CLI gets (§3.1 step 8), the way `Workflow.agent` builds its input: a non-blank
 * string; `{query, hints}` as `<query>\n\nHints: <hints>`; a `query`; or a `prompt`. A worker's
 * `{task: …}` object is deliberately not translated.
 */
export function promptOf(input: unknown): string | undefined {
  const bare = nonBlank.safeParse(input);
  if (bare.success) return bare.data;
  const hinted = queryWithHints.safeParse(input);
  if (hinted.success) return `${hinted.data.query}\n\nHints: ${hinted.data.hints}`;
  const asked = query.safeParse(input);
  if (asked.success) return asked.data.query;
  const prompted = prompt.safeParse(input);
  if (prompted.success) return prompted.data.prompt;
  return undefined;
}

/** §3.1 steps 1–8: the contract's request checks, then the prompt. */
export function parseShimRequest(line: string): ShimRequestParse {
  const parsed = parseRequestLine(line);
  if (!parsed.ok) return parsed;
  const request: ContractRequest = parsed.request;
  const text = promptOf(request.input);
  if (text === undefined) return { ok: false, problem: PROMPT_PROBLEM, requestId: request.request_id };
  const shimRequest: ShimRequest = {
    request_id: request.request_id,
    kind: request.kind,
    input: request.input,
    prompt: text,
  };
  if (request.limits !== undefined) shimRequest.max_steps = request.limits.max_steps;
  if (request.schema !== undefined) shimRequest.schema = request.schema;
  return { ok: true, request: shimRequest };
}
