import type { Usage } from '@libos/contract';

/** One usage reading in the contract's counters, before it becomes a result's `usage`. */
export interface Tokens {
  /** Everything the model read: fresh input plus cache reads and writes. */
  prompt: number;
  completion: number;
  hit: number;
  miss: number;
}

export const ZERO_TOKENS: Tokens = { prompt: 0, completion: 0, hit: 0, miss: 0 };

export function addTokens(a: Tokens, b: Tokens): Tokens {
  return {
    prompt: a.prompt + b.prompt,
    completion: a.completion + b.completion,
    hit: a.hit + b.hit,
    miss: a.miss + b.miss,
  };
}

/** The result document's `usage`: `total_tokens` derived, `cost_usd` only when the CLI stated it. */
export function toUsage(tokens: Tokens, costUsd?: number): Usage {
  const usage: Usage = {
    prompt_tokens: tokens.prompt,
    completion_tokens: tokens.completion,
    total_tokens: tokens.prompt + tokens.completion,
    prompt_cache_hit_tokens: tokens.hit,
    prompt_cache_miss_tokens: tokens.miss,
  };
  if (costUsd !== undefined) usage.cost_usd = costUsd;
  return usage;
}

/** Spreads into an ending: `usage` only when known (an unknown spend is omitted, never zero). */
export function usageField(usage: Usage | undefined): { usage?: Usage } {
  return usage === undefined ? {} : { usage };
}
