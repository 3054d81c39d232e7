// The demo's child: tells its parent it started, optionally spawns grandchildren (leaves) through
// the SDK's fromEnv() and waits for them, then reports a result with its (simulated) usage.
// node examples/dist/children/demo-worker.js {result_file}
import { setTimeout as sleep } from 'node:timers/promises';
import { serveChild } from '@libos/contract';
import { fromEnv } from '@libos/sdk';
import { z } from 'zod';

const inputSchema = z.object({
  goal: z.string(),
  input: z.object({
    item: z.number().int(),
    work_ms: z.number().int().min(0).default(200),
    leaves: z.number().int().min(0).default(0),
    leaf_image: z.string().default('demo-leaf'),
  }),
});

await serveChild(
  async (request, { signal }) => {
    const { input } = inputSchema.parse(request.input);
    const me = fromEnv();
    await me.send({ to: 'parent', channel: 'progress', body: `item ${input.item}: started` });
    const leaves: unknown[] = [];
    if (input.leaves > 0) {
      const spawned = [];
      for (let i = 0; i < input.leaves; i++) {
        spawned.push(
          await me.spawn({
            goal: `leaf ${i} of item ${input.item}`,
            image: input.leaf_image,
            input: { item: input.item, leaf: i },
            resource_budget: { wall_ms: 15_000, steps: 2, children: 0 },
          }),
        );
      }
      for (const leaf of spawned) {
        const done = await me.wait({ child_pid: leaf.pid }, { signal });
        leaves.push(done.result_oid ? (await me.readObject({ oid: done.result_oid })).payload : done.outcome);
      }
    }
    await sleep(input.work_ms, undefined, { signal }).catch(() => undefined);
    if (signal.aborted) return { status: 'interrupted', reason: 'the parent closed stdin' };
    await me.send({ to: 'parent', channel: 'progress', body: `item ${input.item}: done` });
    const tokens = 100 + input.item * 10;
    return {
      status: 'completed',
      output: { item: input.item, square: input.item * input.item, leaves },
      usage: {
        prompt_tokens: tokens,
        completion_tokens: 20,
        total_tokens: tokens + 20,
        prompt_cache_hit_tokens: 0,
        prompt_cache_miss_tokens: tokens,
      },
      steps: 1 + input.leaves,
    };
  },
  { name: 'demo worker' },
);
