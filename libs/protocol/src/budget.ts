import { z } from 'zod';

export const BUDGET_DIMENSIONS = [
  'tokens',
  'cost_usd',
  'steps',
  'wall_ms',
  'children',
  'object_bytes',
] as const;
export type BudgetDimension = (typeof BUDGET_DIMENSIONS)[number];

const count = z.number().int().min(0).max(1e12);

/** A requested budget: limits per dimension. An omitted dimension is attenuated from the parent. */
export const budgetRequestSchema = z.strictObject({
  tokens: count.optional(),
  cost_usd: z.number().min(0).max(1e6).optional(),
  steps: count.optional(),
  wall_ms: count.optional(),
  children: count.optional(),
  /** Bytes of object payloads the process and its descendants may hold at once (released ones count no more). */
  object_bytes: count.optional(),
});
export type BudgetRequest = z.infer<typeof budgetRequestSchema>;

/** One dimension as the kernel accounts it. `limit: null` is unlimited. */
export const budgetDimensionViewSchema = z.object({
  limit: z.number().nullable(),
  reserved: z.number(),
  used: z.number(),
  remaining: z.number().nullable(),
});
export type BudgetDimensionView = z.infer<typeof budgetDimensionViewSchema>;

export const budgetViewSchema = z.object({
  tokens: budgetDimensionViewSchema,
  cost_usd: budgetDimensionViewSchema,
  steps: budgetDimensionViewSchema,
  wall_ms: budgetDimensionViewSchema,
  children: budgetDimensionViewSchema,
  object_bytes: budgetDimensionViewSchema,
});
export type BudgetView = z.infer<typeof budgetViewSchema>;
