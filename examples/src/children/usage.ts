// Reports the usage and steps its input asks for, and completes with `{reported}`: a scriptable
// spender for tests of budgets and accounting. Input (all optional): prompt_tokens (7),
// completion_tokens (3), cache_hit_tokens (0), cost_usd (absent), steps (1), status
// (`completed`, or another ending; reasoned endings get the reason "asked to end <status>").
// node examples/dist/children/usage.js {result_file}
import { type ChildEnding, resultStatusSchema, serveChild, type Usage } from '@libos/contract';
import { z } from 'zod';

const count = z.number().int().min(0);
const inputSchema = z.object({
  prompt_tokens: count.default(7),
  completion_tokens: count.default(3),
  cache_hit_tokens: count.default(0),
  cost_usd: z.number().min(0).optional(),
  steps: count.default(1),
  status: resultStatusSchema.default('completed'),
});

await serveChild(
  async (request): Promise<ChildEnding> => {
    const input = inputSchema.safeParse(request.input ?? {});
    if (!input.success) return { status: 'failed', reason: `bad input: ${z.prettifyError(input.error)}` };
    const { prompt_tokens, completion_tokens, cache_hit_tokens, cost_usd, steps, status } = input.data;
    const usage: Usage = {
      prompt_tokens,
      completion_tokens,
      total_tokens: prompt_tokens + completion_tokens,
      prompt_cache_hit_tokens: Math.min(cache_hit_tokens, prompt_tokens),
      prompt_cache_miss_tokens: prompt_tokens - Math.min(cache_hit_tokens, prompt_tokens),
      ...(cost_usd === undefined ? {} : { cost_usd }),
    };
    switch (status) {
      case 'completed':
        return { status, output: { reported: usage, steps }, usage, steps };
      case 'no_report':
      case 'max_steps_exhausted':
        return { status, usage, steps };
      default:
        return { status, reason: `asked to end ${status}`, usage, steps };
    }
  },
  { name: 'usage child' },
);
