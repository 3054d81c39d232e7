// The example workflow's agent: a deterministic stand-in for a model. It answers `input.query`
// upper-cased, after `input.work_ms` of "thinking", and spends one prompt token per character
// and one completion token per word. `input.decline` ends it `no_report`; `input.fail` ends it
// `failed` (how the workflow shows a quorum and a retry without a flaky model).
// node examples/dist/workflows/answer-child.js {result_file}
import { setTimeout as sleep } from 'node:timers/promises';
import { serveChild, type Usage } from '@libos/contract';
import { z } from 'zod';
import { callInput } from './call-input.js';

const inputSchema = z.object({
  query: z.string(),
  work_ms: z.number().int().min(0).default(0),
  decline: z.boolean().default(false),
  fail: z.boolean().default(false),
});

function usageOf(query: string, words: number): Usage {
  return {
    prompt_tokens: query.length,
    completion_tokens: words,
    total_tokens: query.length + words,
    prompt_cache_hit_tokens: 0,
    prompt_cache_miss_tokens: query.length,
  };
}

await serveChild(
  async (request, { signal }) => {
    const input = inputSchema.safeParse(callInput(request.input));
    if (!input.success) return { status: 'failed', reason: `bad input: ${z.prettifyError(input.error)}` };
    const { query, work_ms, decline, fail } = input.data;
    const cancelled = await sleep(work_ms, false, { signal }).catch(() => true);
    const words = query.split(/\s+/).filter(Boolean).length;
    const usage = usageOf(query, words);
    if (cancelled) return { status: 'interrupted', reason: 'the parent closed stdin', usage, steps: 1 };
    if (decline) return { status: 'no_report', usage, steps: 1 };
    if (fail) return { status: 'failed', reason: 'asked to fail', usage, steps: 1 };
    return { status: 'completed', output: { answer: query.toUpperCase(), words }, usage, steps: 1 };
  },
  { name: 'answer child' },
);
