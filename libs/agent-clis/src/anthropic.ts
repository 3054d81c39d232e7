// The Anthropic Messages API (`POST /v1/messages`), as much of it as Claude Code needs: a
// streamed reply as server-sent events (message_start, content_block_start/delta/stop for text
// and tool_use with input_json_delta, message_delta with usage, message_stop), the same reply as
// one JSON body when `stream` is false, and the API's error body.

import {
  DEFAULT_USAGE,
  type ModelRequest,
  type ModelUsage,
  pieces,
  type Reply,
  stringsIn,
} from './script.js';
import type { ReplyWriter } from './sse.js';

type Json = Record<string, unknown>;

export function anthropicRequest(path: string, body: Json, index: number): ModelRequest {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : [];
  const toolResults: string[] = [];
  const last = messages.at(-1);
  if (last !== undefined && Array.isArray(last.content)) {
    for (const block of last.content as Json[]) {
      if (block.type === 'tool_result') toolResults.push(stringsIn(block.content));
    }
  }
  return {
    api: 'anthropic',
    index,
    path,
    model: typeof body.model === 'string' ? body.model : '',
    stream: body.stream === true,
    tools: tools.map((tool: Json) => String(tool.name ?? '')),
    text: stringsIn([body.system, messages]),
    toolResults,
    body,
  };
}

function usageOf(usage: ModelUsage, outputTokens: number): Json {
  return {
    input_tokens: usage.input_tokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: usage.cached_tokens ?? 0,
    output_tokens: outputTokens,
  };
}

/** The content blocks of a reply, as the final message holds them. */
function blocksOf(reply: Reply & { type: 'text' | 'tool' }, id: string): Json[] {
  if (reply.type === 'text') return [{ type: 'text', text: reply.text }];
  const blocks: Json[] = [];
  if (reply.text !== undefined) blocks.push({ type: 'text', text: reply.text });
  blocks.push({ type: 'tool_use', id: `toolu_${id}`, name: reply.name, input: reply.input });
  return blocks;
}

export async function writeAnthropic(request: ModelRequest, reply: Reply, id: string, out: ReplyWriter) {
  if (reply.type === 'error') {
    const type = reply.status === 429 ? 'rate_limit_error' : 'invalid_request_error';
    out.json(reply.status, { type: 'error', error: { type, message: reply.message } });
    return;
  }
  const usage = reply.usage ?? DEFAULT_USAGE;
  const message = {
    id: `msg_${id}`,
    type: 'message',
    role: 'assistant',
    model: request.model,
    stop_sequence: null,
  };
  if (reply.type !== 'hang' && !request.stream) {
    out.json(200, {
      ...message,
      content: blocksOf(reply, id),
      stop_reason: reply.type === 'tool' ? 'tool_use' : 'end_turn',
      usage: usageOf(usage, usage.output_tokens),
    });
    return;
  }
  out.events();
  await out.event('message_start', {
    type: 'message_start',
    message: { ...message, content: [], stop_reason: null, usage: usageOf(usage, 1) },
  });
  if (reply.type === 'hang') {
    await out.event('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    });
    await out.event('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: 'Thinking it over' },
    });
    await out.hang();
    return;
  }
  let index = 0;
  const text = reply.text;
  if (text !== undefined) {
    await out.event('content_block_start', {
      type: 'content_block_start',
      index,
      content_block: { type: 'text', text: '' },
    });
    const chunks = reply.type === 'text' ? reply.chunks : 1;
    for (const piece of pieces(text, chunks)) {
      if (reply.type === 'text' && reply.delayMs !== undefined) await out.pause(reply.delayMs);
      await out.event('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'text_delta', text: piece },
      });
    }
    await out.event('content_block_stop', { type: 'content_block_stop', index });
    index += 1;
  }
  if (reply.type === 'tool') {
    await out.event('content_block_start', {
      type: 'content_block_start',
      index,
      content_block: { type: 'tool_use', id: `toolu_${id}`, name: reply.name, input: {} },
    });
    for (const piece of pieces(JSON.stringify(reply.input), 2)) {
      await out.event('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: piece },
      });
    }
    await out.event('content_block_stop', { type: 'content_block_stop', index });
  }
  await out.event('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: reply.type === 'tool' ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  await out.event('message_stop', { type: 'message_stop' });
  out.end();
}
