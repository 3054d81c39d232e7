// What a scripted model answers, and the request as the script sees it, whichever API asked.

export interface ModelUsage {
  input_tokens: number;
  output_tokens: number;
  /** Prompt tokens read from the provider's cache (Anthropic `cache_read_input_tokens`, OpenAI `cached_tokens`). */
  cached_tokens?: number;
}

/** One answer of the model. */
export type Reply =
  /** A plain answer, streamed in `chunks` deltas `delayMs` apart (slow streams make a cancel land mid-reply). */
  | { type: 'text'; text: string; usage?: ModelUsage; chunks?: number; delayMs?: number }
  /** A call of tool `name` (the model's name for it, e.g. `mcp__libos__get_process`), optionally after some text. */
  | { type: 'tool'; name: string; input: Record<string, unknown>; text?: string; usage?: ModelUsage }
  /** An HTTP error with the API's error body. */
  | { type: 'error'; status: number; message: string }
  /** The head of a reply (usage included), then nothing until the client goes away. */
  | { type: 'hang'; usage?: ModelUsage };

export type Api = 'anthropic' | 'openai';

/** A model request, normalised across the two APIs. */
export interface ModelRequest {
  api: Api;
  /** 1-based order among the requests the script answered. */
  index: number;
  path: string;
  model: string;
  stream: boolean;
  /** The names of the tools offered, as the model would call them. */
  tools: string[];
  /** Every text the client sent (system, user turns, tool results), for matching. */
  text: string;
  /** The outputs of tool calls sent back in this request, in order. */
  toolResults: string[];
  body: Record<string, unknown>;
}

/**
 * One scripted turn. Turns are used in order by the requests that `match` (default: every
 * request the API's side-request filter lets through); `reply` may read the request, e.g. to
 * call a tool with an id an earlier tool result named.
 */
export interface Turn {
  match?: (request: ModelRequest) => boolean;
  /** Answers every later request too (an API that keeps refusing: CLIs retry some errors). */
  repeat?: boolean;
  reply: Reply | ((request: ModelRequest) => Reply);
}

export const DEFAULT_USAGE: ModelUsage = { input_tokens: 100, output_tokens: 20 };

/** Splits `text` into at most `chunks` pieces (at least one, possibly empty). */
export function pieces(text: string, chunks = 1): string[] {
  const n = Math.max(1, Math.min(chunks, text.length));
  const size = Math.ceil(text.length / n);
  const out: string[] = [];
  for (let at = 0; at < text.length; at += size) out.push(text.slice(at, at + size));
  return out.length === 0 ? [''] : out;
}

/** Every string found under `value`, joined with newlines. */
export function stringsIn(value: unknown): string {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(value);
  return out.join('\n');
}
