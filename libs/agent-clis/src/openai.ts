// The OpenAI Responses API (`POST /v1/responses`), as much of it as Codex needs: a streamed
// reply as server-sent events (response.created, output_item.added/done, output_text.delta,
// function_call_arguments.delta/done, response.completed with usage) and the API's error body.

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

/** A tool's name as the model calls it (function tools by `name`; namespaced MCP tools as `<ns>__<name>`). */
function toolNames(tool: Json): string[] {
  if (Array.isArray(tool.tools)) {
    const namespace = typeof tool.name === 'string' ? `${tool.name}__` : '';
    return (tool.tools as Json[]).flatMap((inner) => toolNames(inner).map((name) => `${namespace}${name}`));
  }
  if (typeof tool.name === 'string') return [tool.name];
  return typeof tool.type === 'string' ? [tool.type] : [];
}

/** A namespaced tool (`mcp__libos__spawn_child_process`) as a call names it: `{namespace, name}`. */
function callName(request: ModelRequest, name: string): { name: string; namespace?: string } {
  for (const tool of (Array.isArray(request.body.tools) ? request.body.tools : []) as Json[]) {
    if (tool.type !== 'namespace' || typeof tool.name !== 'string' || !name.startsWith(`${tool.name}__`))
      continue;
    const short = name.slice(tool.name.length + 2);
    if ((tool.tools as Json[] | undefined)?.some((inner) => inner.name === short)) {
      return { name: short, namespace: tool.name };
    }
  }
  return { name };
}

export function openaiRequest(path: string, body: Json, index: number): ModelRequest {
  const input = Array.isArray(body.input) ? (body.input as Json[]) : [];
  const toolResults: string[] = [];
  // The outputs sent back for the calls of the last reply: the items after the last user message.
  for (const item of input) {
    if (item.type === 'message' && item.role === 'user') toolResults.length = 0;
    if (item.type === 'function_call_output') toolResults.push(stringsIn(item.output));
  }
  return {
    api: 'openai',
    index,
    path,
    model: typeof body.model === 'string' ? body.model : '',
    stream: body.stream === true,
    tools: (Array.isArray(body.tools) ? (body.tools as Json[]) : []).flatMap(toolNames),
    text: stringsIn([body.instructions, input]),
    toolResults,
    body,
  };
}

function usageOf(usage: ModelUsage): Json {
  return {
    input_tokens: usage.input_tokens,
    input_tokens_details: { cached_tokens: usage.cached_tokens ?? 0 },
    output_tokens: usage.output_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.input_tokens + usage.output_tokens,
  };
}

export async function writeOpenai(request: ModelRequest, reply: Reply, id: string, out: ReplyWriter) {
  if (reply.type === 'error') {
    const type = reply.status === 429 ? 'rate_limit_exceeded' : 'invalid_request_error';
    out.json(reply.status, { error: { message: reply.message, type, param: null, code: type } });
    return;
  }
  const response = {
    id: `resp_${id}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    model: request.model,
    status: 'in_progress',
    output: [] as Json[],
  };
  let sequence = 0;
  const send = (type: string, data: Json) => out.event(type, { type, sequence_number: sequence++, ...data });
  out.events();
  await send('response.created', { response });
  await send('response.in_progress', { response });
  const output: Json[] = [];
  const text = reply.type === 'hang' ? 'Thinking it over' : reply.text;
  if (text !== undefined) {
    const index = output.length;
    const itemId = `msg_${id}`;
    const item = { type: 'message', id: itemId, role: 'assistant', status: 'in_progress', content: [] };
    await send('response.output_item.added', { output_index: index, item });
    const part = { type: 'output_text', text: '', annotations: [] };
    await send('response.content_part.added', {
      item_id: itemId,
      output_index: index,
      content_index: 0,
      part,
    });
    const chunks = reply.type === 'text' ? reply.chunks : 1;
    for (const piece of pieces(text, chunks)) {
      if (reply.type === 'text' && reply.delayMs !== undefined) await out.pause(reply.delayMs);
      await send('response.output_text.delta', {
        item_id: itemId,
        output_index: index,
        content_index: 0,
        delta: piece,
      });
    }
    if (reply.type === 'hang') {
      await out.hang();
      return;
    }
    await send('response.output_text.done', { item_id: itemId, output_index: index, content_index: 0, text });
    const done = { ...part, text };
    await send('response.content_part.done', {
      item_id: itemId,
      output_index: index,
      content_index: 0,
      part: done,
    });
    const finished = { ...item, status: 'completed', content: [done] };
    await send('response.output_item.done', { output_index: index, item: finished });
    output.push(finished);
  }
  if (reply.type === 'tool') {
    const index = output.length;
    const args = JSON.stringify(reply.input);
    const item = {
      type: 'function_call',
      id: `fc_${id}`,
      call_id: `call_${id}`,
      ...callName(request, reply.name),
      arguments: '',
      status: 'in_progress',
    };
    await send('response.output_item.added', { output_index: index, item });
    for (const piece of pieces(args, 2)) {
      await send('response.function_call_arguments.delta', {
        item_id: item.id,
        output_index: index,
        delta: piece,
      });
    }
    await send('response.function_call_arguments.done', {
      item_id: item.id,
      output_index: index,
      arguments: args,
    });
    const finished = { ...item, arguments: args, status: 'completed' };
    await send('response.output_item.done', { output_index: index, item: finished });
    output.push(finished);
  }
  const usage = usageOf(reply.usage ?? DEFAULT_USAGE);
  await send('response.completed', { response: { ...response, status: 'completed', output, usage } });
  out.end();
}
