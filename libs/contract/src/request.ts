import { z } from 'zod';
import { hasKey, isJsonObject } from './json.js';

// The request document, version 1 (reference §1.5). `input` is opaque JSON; `schema` is a
// JSON Schema object the report must satisfy.
const maxStepsSchema = z.number().refine((n) => Number.isInteger(n) && n >= 1);

export const contractRequestSchema = z.object({
  version: z.literal(1),
  request_id: z.string(),
  kind: z.string(),
  input: z.unknown(),
  limits: z.object({ max_steps: maxStepsSchema }).optional(),
  schema: z.record(z.string(), z.unknown()).optional(),
});

export type ContractRequest = z.infer<typeof contractRequestSchema>;

export type ParsedRequest =
  | { ok: true; request: ContractRequest }
  | { ok: false; problem: string; requestId?: string };

/**
 * Parses one request line as a conforming child must (reference §3.1 steps 1–7), in check order
 * and with the exact problem texts. `requestId` is set whenever the line was a JSON object with
 * a string `request_id`, so the caller can still answer with a `failed` result for that id.
 */
export function parseRequestLine(line: string): ParsedRequest {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { ok: false, problem: 'the request is not JSON' };
  }
  if (!isJsonObject(value)) return { ok: false, problem: 'the request is not a JSON object' };
  const requestId = typeof value.request_id === 'string' ? value.request_id : undefined;
  const refuse = (problem: string): ParsedRequest =>
    requestId === undefined ? { ok: false, problem } : { ok: false, problem, requestId };

  const version = value.version;
  if (typeof version !== 'number') return refuse('the request has no `version`');
  if (version !== 1) return refuse(`unsupported request version ${JSON.stringify(version)}`);
  if (requestId === undefined) return refuse('the request has no `request_id` string');
  if (typeof value.kind !== 'string') return refuse('the request has no `kind` string');
  if (!hasKey(value, 'input')) return refuse('the request has no `input`');

  let limits: ContractRequest['limits'];
  if (hasKey(value, 'limits')) {
    const raw = value.limits;
    if (!isJsonObject(raw)) return refuse('`limits` must be a JSON object');
    if (hasKey(raw, 'max_steps')) {
      const maxSteps = maxStepsSchema.safeParse(raw.max_steps);
      if (!maxSteps.success) return refuse('`limits.max_steps` must be an integer of at least 1');
      limits = { max_steps: maxSteps.data };
    }
  }

  let schema: ContractRequest['schema'];
  if (hasKey(value, 'schema') && value.schema !== null) {
    if (!isJsonObject(value.schema)) return refuse('`schema` must be a JSON object');
    schema = value.schema;
  }

  const request: ContractRequest = {
    version: 1,
    request_id: requestId,
    kind: value.kind,
    input: value.input,
  };
  if (limits !== undefined) request.limits = limits;
  if (schema !== undefined) request.schema = schema;
  return { ok: true, request };
}

/** What a runner puts on a child's stdin: the request document as one line, `\n`-terminated. */
export type RequestFields = {
  request_id: string;
  kind: string;
  input: unknown;
  limits?: { max_steps: number } | undefined;
  schema?: unknown;
};

/**
 * Encodes a request line with the reference key order: version, request_id, kind, input, then
 * limits and schema when present. An undefined input is sent as null (the key is required);
 * a null schema means no schema.
 */
export function encodeRequestLine(req: RequestFields): string {
  const doc: Record<string, unknown> = {
    version: 1,
    request_id: req.request_id,
    kind: req.kind,
    input: req.input === undefined ? null : req.input,
  };
  if (req.limits !== undefined) doc.limits = { max_steps: req.limits.max_steps };
  if (req.schema !== undefined && req.schema !== null) doc.schema = req.schema;
  return `${JSON.stringify(doc)}\n`;
}
