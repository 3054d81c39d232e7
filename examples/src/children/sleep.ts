// Sleeps `input.ms`, then completes with `{slept}`. Honours the parent's cancel (stdin EOF) by
// returning `interrupted` at once, with the usage it has: one prompt token per 10 ms slept.
// node examples/dist/children/sleep.js {result_file}
import { serveChild, type Usage } from '@libos/contract';
import { z } from 'zod';

const inputSchema = z.object({ ms: z.number().int().min(0) });

function usageAfter(ms: number): Usage {
  const prompt = Math.floor(ms / 10);
  return {
    prompt_tokens: prompt,
    completion_tokens: 0,
    total_tokens: prompt,
    prompt_cache_hit_tokens: 0,
    prompt_cache_miss_tokens: prompt,
  };
}

await serveChild(
  async (request, { signal }) => {
    const input = inputSchema.safeParse(request.input);
    if (!input.success) return { status: 'failed', reason: '`input.ms` must be a whole number of ms' };
    const started = performance.now();
    const cancelled = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), input.data.ms);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve(true);
      });
      if (signal.aborted) resolve(true);
    });
    const slept = Math.round(performance.now() - started);
    if (cancelled) {
      return { status: 'interrupted', reason: 'the parent closed stdin', usage: usageAfter(slept), steps: 1 };
    }
    return { status: 'completed', output: { slept: input.data.ms }, usage: usageAfter(slept), steps: 1 };
  },
  { name: 'sleep child' },
);
