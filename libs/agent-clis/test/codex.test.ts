import { describe, expect, it } from 'vitest';
import type { Turn } from '../src/index.js';
import { runRealShim, streaming } from './shim-run.js';

// The real Codex (0.169.0) through `libos shim codex`, against the scripted model.

describe('the real Codex through the shim', () => {
  it('a plain answer: completed, with the usage the model reported', async () => {
    const { result, server } = await runRealShim('codex', {
      turns: [
        {
          reply: {
            type: 'text',
            text: 'Hello from the script',
            usage: { input_tokens: 120, output_tokens: 30, cached_tokens: 20 },
          },
        },
      ],
      request: { input: { query: '- a bullet question' } },
    });
    expect(result).toMatchObject({
      status: 'completed',
      output: { answer: 'Hello from the script', engine: 'codex' },
      steps: 1,
      usage: {
        prompt_tokens: 120,
        completion_tokens: 30,
        total_tokens: 150,
        prompt_cache_hit_tokens: 20,
        prompt_cache_miss_tokens: 100,
      },
    });
    expect(server.turnsUsed()[0]?.text).toContain('- a bullet question');
  });

  it('a tool call then an answer: the tool result reached the model, usage summed', async () => {
    const turns: Turn[] = [
      { reply: { type: 'tool', name: 'get_goal', input: {}, text: 'Let me check the goal.' } },
      { reply: (request) => ({ type: 'text', text: `Tool answered: ${request.toolResults.length > 0}` }) },
    ];
    const { result } = await runRealShim('codex', { turns });
    expect(result).toMatchObject({
      status: 'completed',
      output: { answer: 'Tool answered: true' },
      usage: { prompt_tokens: 200, completion_tokens: 40 },
    });
  });

  const schema = {
    type: 'object',
    properties: { verdict: { type: 'string' }, score: { type: 'integer' } },
    required: ['verdict', 'score'],
    additionalProperties: false,
  };

  it('a schema answer: the message, parsed, is the answer; the schema reached the model', async () => {
    const { result, server } = await runRealShim('codex', {
      turns: [{ reply: { type: 'text', text: '{"verdict":"fine","score":7}' } }],
      request: { schema },
    });
    expect(result).toMatchObject({ status: 'completed', output: { answer: { verdict: 'fine', score: 7 } } });
    expect(JSON.stringify(server.turnsUsed()[0]?.body.text)).toContain('"score"');
  });

  it('an answer that breaks the schema: failed, with the validator path', async () => {
    const { result } = await runRealShim('codex', {
      turns: [{ reply: { type: 'text', text: '{"verdict":"fine","score":"seven"}' } }],
      request: { schema },
    });
    expect(result).toMatchObject({
      status: 'failed',
      reason: 'the answer does not satisfy the schema: $.score: must be integer',
    });
  });

  it('cancelled mid-stream: interrupted', async () => {
    const slow: Turn = { reply: { type: 'text', text: 'x'.repeat(400), chunks: 200, delayMs: 100 } };
    const { result } = await runRealShim('codex', { turns: [slow], cancelWhen: streaming });
    expect(result).toMatchObject({ status: 'interrupted', reason: 'the parent closed stdin' });
  });

  it('an API error: failed, named as an API error', async () => {
    const refusal: Turn = {
      reply: { type: 'error', status: 400, message: 'invalid request: temperature out of range' },
      repeat: true,
    };
    const { result } = await runRealShim('codex', { turns: [refusal] });
    expect(result).toMatchObject({ status: 'failed', steps: 0 });
    expect(result?.reason).toBe('codex: API error: invalid request: temperature out of range');
  });

  it('the step ceiling: max_steps_exhausted once the over-limit step arrives', async () => {
    const again: Turn = { reply: { type: 'text', text: 'Still thinking.' }, repeat: true };
    const tool: Turn = {
      reply: { type: 'tool', name: 'get_goal', input: {}, text: 'Checking again.' },
      repeat: true,
    };
    const { result } = await runRealShim('codex', {
      turns: [tool, again],
      request: { limits: { max_steps: 2 } },
    });
    expect(result).toMatchObject({ status: 'max_steps_exhausted', steps: 3 });
  });

  it('an MCP server that fails to start: failed (the server is required), the reason names it', async () => {
    // The libos server is wired in (the three variables are set) but cannot act: a malformed pid.
    const { result } = await runRealShim('codex', {
      turns: [{ reply: { type: 'text', text: 'No tools today.' }, repeat: true }],
      env: { LIBOS_URL: 'http://127.0.0.1:9', LIBOS_PID: 'not-a-pid', LIBOS_TOKEN: 't' },
    });
    expect(result).toMatchObject({ status: 'failed', steps: 0 });
    expect(result?.reason).toMatch(
      /^codex: MCP server failed to start: libos: handshaking with MCP server failed/,
    );
  });
});
