import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Turn } from '../src/index.js';
import { runRealShim, streaming } from './shim-run.js';

// The real Claude Code (2.1.328) through `libos shim claude`, against the scripted model.

describe('the real Claude Code through the shim', () => {
  it('a plain answer: completed, with the usage the model reported, priced, in one step', async () => {
    const { result, server } = await runRealShim('claude', {
      turns: [
        {
          reply: {
            type: 'text',
            text: 'Hello from the script',
            usage: { input_tokens: 120, output_tokens: 30 },
          },
        },
      ],
      request: { input: { query: '- a bullet question, which Claude would read as an option' } },
    });
    expect(result).toMatchObject({
      status: 'completed',
      output: { answer: 'Hello from the script', engine: 'claude', num_turns: 1 },
      steps: 1,
      usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 },
    });
    expect(result?.usage).toMatchObject({ cost_usd: expect.any(Number) });
    expect(server.turnsUsed()[0]?.text).toContain('- a bullet question');
  });

  it('a tool call then an answer: two steps, the tool result reached the model, usage summed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'libos-claude-cwd-'));
    try {
      await writeFile(join(dir, 'note.txt'), 'the answer is forty-two\n');
      const turns: Turn[] = [
        {
          reply: {
            type: 'tool',
            name: 'Read',
            input: { file_path: join(dir, 'note.txt') },
            text: 'Let me read it.',
          },
        },
        {
          reply: (request) => ({
            type: 'text',
            text: `The note says: ${request.toolResults.join(' ').includes('forty-two') ? 'forty-two' : '?'}`,
          }),
        },
      ];
      const { result } = await runRealShim('claude', { turns, cwd: dir });
      expect(result).toMatchObject({
        status: 'completed',
        output: { answer: 'The note says: forty-two' },
        steps: 2,
        usage: { prompt_tokens: 200, completion_tokens: 40 },
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  const schema = {
    type: 'object',
    properties: { verdict: { type: 'string' }, score: { type: 'integer' } },
    required: ['verdict', 'score'],
  };

  it('a schema answer: the structured output is the answer', async () => {
    const { result } = await runRealShim('claude', {
      turns: [
        { reply: { type: 'tool', name: 'StructuredOutput', input: { verdict: 'fine', score: 7 } } },
        { reply: { type: 'text', text: 'Done.' } },
      ],
      request: { schema },
    });
    expect(result).toMatchObject({ status: 'completed', output: { answer: { verdict: 'fine', score: 7 } } });
  });

  it('a model that ignores the schema: failed, naming where the answer breaks it', async () => {
    const text: Turn = { reply: { type: 'text', text: 'I would rather not.' }, repeat: true };
    const { result } = await runRealShim('claude', { turns: [text], request: { schema } });
    expect(result?.status).toBe('failed');
    expect(result?.reason).toBe('the answer does not satisfy the schema: $: must be object');
  });

  it('cancelled mid-stream: interrupted, with the tokens of the reply cut short', async () => {
    // Claude's result after the interrupt carries them in `modelUsage` only (its `usage` is all
    // zero, see libs/shim's 2.1.328 lines); a result later than the shim's grace leaves the
    // message's own snapshot. Either way the input the model read is counted.
    const slow: Turn = {
      reply: {
        type: 'text',
        text: 'x'.repeat(400),
        chunks: 200,
        delayMs: 100,
        usage: { input_tokens: 1234, output_tokens: 56 },
      },
    };
    const { result } = await runRealShim('claude', { turns: [slow], cancelWhen: streaming });
    expect(result).toMatchObject({ status: 'interrupted', reason: 'the parent closed stdin' });
    expect(result?.usage).toMatchObject({ prompt_tokens: 1234 });
  });

  it('an API error: failed, named as an API error, no step counted', async () => {
    const refusal: Turn = {
      reply: { type: 'error', status: 400, message: 'invalid request: temperature out of range' },
      repeat: true,
    };
    const { result } = await runRealShim('claude', { turns: [refusal] });
    expect(result).toMatchObject({ status: 'failed', steps: 0 });
    expect(result?.reason).toBe('claude: API error 400: invalid request: temperature out of range');
  });

  it('the step ceiling: max_steps_exhausted once the over-limit step arrives', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'libos-claude-cwd-'));
    try {
      await writeFile(join(dir, 'note.txt'), 'again\n');
      const again: Turn = {
        reply: { type: 'tool', name: 'Read', input: { file_path: join(dir, 'note.txt') } },
        repeat: true,
      };
      const { result } = await runRealShim('claude', {
        turns: [again],
        cwd: dir,
        request: { limits: { max_steps: 2 } },
      });
      expect(result).toMatchObject({ status: 'max_steps_exhausted', steps: 3 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('an MCP server that fails to start is named in the report', async () => {
    // The libos server is wired in (the three variables are set) but cannot act: a malformed pid.
    const { result } = await runRealShim('claude', {
      turns: [{ reply: { type: 'text', text: 'No tools today.' } }],
      env: { LIBOS_URL: 'http://127.0.0.1:9', LIBOS_PID: 'not-a-pid', LIBOS_TOKEN: 't' },
    });
    expect(result).toMatchObject({
      status: 'completed',
      output: { answer: 'No tools today.', notices: ['MCP server libos failed to start'] },
    });
  });
});
