import { z } from 'zod';

const integral = z.number().refine((n) => Number.isInteger(n));
const nonNegativeIntegral = z.number().refine((n) => Number.isInteger(n) && n >= 0);

/**
 * Cumulative usage a child reports (reference §1.10). All five counters must be integral; only
 * prompt and completion tokens must also be non-negative (the reference's asymmetry, kept).
 * `cost_usd` is the engine's stated price: finite and ≥ 0 when present, absent when unknown.
 */
export const usageSchema = z.object({
  prompt_tokens: nonNegativeIntegral,
  completion_tokens: nonNegativeIntegral,
  total_tokens: integral,
  prompt_cache_hit_tokens: integral,
  prompt_cache_miss_tokens: integral,
  cost_usd: z.number().min(0).optional(),
});

export type Usage = z.infer<typeof usageSchema>;

/** `steps`: model requests (or the engine's step unit), integral and ≥ 0. */
export const stepsSchema = nonNegativeIntegral;

/** The usage document in the reference key order; `cost_usd` only when stated (0 is a price). */
export function usageDocument(usage: Usage): Record<string, number> {
  const doc: Record<string, number> = {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens,
    prompt_cache_hit_tokens: usage.prompt_cache_hit_tokens,
    prompt_cache_miss_tokens: usage.prompt_cache_miss_tokens,
  };
  if (usage.cost_usd !== undefined) doc.cost_usd = usage.cost_usd;
  return doc;
}
