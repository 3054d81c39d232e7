// A reference-style workflow program run hosted (reference §4): it takes its launch configuration
// from `WORKFLOW_HOST`, which a libos worker gives every child it launches, so each agent it asks
// for runs as a libos child of this process. Input: `{questions: string[], kind?: string}` (kind
// default `echo`); it asks one agent per question, all at once, and completes with
// `{answers, calls, capacity, host}`: each answer is the agent's report or its failure text.
// Outside libos (no WORKFLOW_HOST) it fails rather than launch anything itself.
// node examples/dist/children/hosted-workflow.js {result_file}
import { type ChildEnding, serveChild } from '@libos/contract';
import { fanOut, hostedContext } from '@libos/sdk';
import { z } from 'zod';

const inputSchema = z.object({
  questions: z.array(z.string().min(1)).min(1).max(100),
  kind: z.string().min(1).default('echo'),
});

await serveChild(
  async (request, { signal }): Promise<ChildEnding> => {
    const parsed = inputSchema.safeParse(request.input);
    if (!parsed.success) return { status: 'failed', reason: `bad input: ${z.prettifyError(parsed.error)}` };
    const { questions, kind } = parsed.data;
    const host = hostedContext();
    if (host === undefined) return { status: 'failed', reason: 'not hosted: WORKFLOW_HOST is not set' };
    const { answers, calls } = await host.run(async (wf) => {
      const results = await fanOut(questions, (prompt) => wf.agent({ prompt, kind }), { signal });
      return { answers: results.map((r) => (r.ok ? r.value : r.error.message)), calls: wf.callsMade() };
    });
    if (signal.aborted) return { status: 'interrupted', reason: 'the parent closed stdin' };
    return {
      status: 'completed',
      output: { answers, calls, capacity: host.childCapacity(), host: host.extension('libos') ?? null },
      // Its own spend: none (its agents' is charged to them, each a libos process of its own).
      usage: {
        prompt_tokens: 0,
        completion_tokens: 0,
        total_tokens: 0,
        prompt_cache_hit_tokens: 0,
        prompt_cache_miss_tokens: 0,
      },
      steps: 0,
    };
  },
  { name: 'hosted workflow' },
);
