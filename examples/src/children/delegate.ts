// Delegates its work to one grandchild: acting as itself through the SDK's fromEnv() (the
// LIBOS_URL, LIBOS_PID and LIBOS_TOKEN its worker gives it), it spawns a child on `input.image`,
// waits for it, reads its result and completes with it. Its parent must delegate
// `process:spawn` (use) and `image:<name>` (read); a refused spawn ends it `failed` with the
// coordinator's code and reason. Honours the cancel (stdin EOF) by cancelling the grandchild.
// node examples/dist/children/delegate.js {result_file}
import { type ChildEnding, serveChild, type Usage } from '@libos/contract';
import { fromEnv, LibosError } from '@libos/sdk';
import { z } from 'zod';

const count = z.number().int().min(0);
const inputSchema = z.object({
  input: z.object({
    image: z.string().min(1),
    goal: z.string().min(1).default('delegated work'),
    input: z.json().optional(),
    budget: z
      .object({ tokens: count, cost_usd: z.number().min(0), steps: count, wall_ms: count, children: count })
      .partial()
      .optional(),
  }),
});

const NOTHING: Usage = {
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  prompt_cache_hit_tokens: 0,
  prompt_cache_miss_tokens: 0,
};

function refusal(error: unknown): string {
  if (error instanceof LibosError)
    return `${error.code}${error.reason ? `/${error.reason}` : ''}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

await serveChild(
  async (request, { signal }): Promise<ChildEnding> => {
    const parsed = inputSchema.safeParse(request.input);
    if (!parsed.success) return { status: 'failed', reason: `bad input: ${z.prettifyError(parsed.error)}` };
    const { image, goal, input, budget } = parsed.data.input;
    const me = fromEnv();
    let grandchild: string;
    try {
      const spawned = await me.spawn({
        goal,
        image,
        ...(input === undefined ? {} : { input }),
        ...(budget === undefined ? {} : { resource_budget: budget }),
      });
      grandchild = spawned.pid;
    } catch (error) {
      return { status: 'failed', reason: `spawn refused: ${refusal(error)}`, usage: NOTHING, steps: 0 };
    }
    try {
      const done = await me.wait({ child_pid: grandchild }, { signal });
      const result = done.result_oid ? (await me.readObject({ oid: done.result_oid })).payload : null;
      return {
        status: 'completed',
        output: { grandchild, status: done.status, outcome: done.outcome?.type ?? null, result },
        usage: NOTHING,
        steps: 1,
      };
    } catch (error) {
      if (!signal.aborted) throw error;
      await me
        .signal({ child_pid: grandchild, signal: 'cancel', reason: 'delegate cancelled' })
        .catch(() => {});
      return { status: 'interrupted', reason: 'the parent closed stdin', usage: NOTHING, steps: 1 };
    }
  },
  { name: 'delegate child' },
);
