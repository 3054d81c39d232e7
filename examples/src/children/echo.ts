// Echo child: completes with the request's input as its report, spending nothing.
// node examples/dist/children/echo.js {result_file}
import { serveChild } from '@libos/contract';

const NOTHING = {
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  prompt_cache_hit_tokens: 0,
  prompt_cache_miss_tokens: 0,
};

await serveChild(
  async (request) => ({ status: 'completed', output: request.input, usage: NOTHING, steps: 0 }),
  {
    name: 'echo child',
  },
);
