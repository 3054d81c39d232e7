import type { ModelRequest, Reply, Turn } from './script.js';

// A scripted model that delegates through the libos MCP tools, whichever CLI asks: it finds the
// tools (Claude Code's deferred tool search first, when they are not offered yet), spawns a child
// per task, waits for each, reads each result, and answers with what the children returned. It
// decides from the request alone (the tools offered, the tool results sent back), so one
// repeating turn drives a whole run.

export interface DelegateOptions {
  /** The image each child runs. */
  image: string;
  /** One child per input, in order. */
  inputs: unknown[];
  /** The deferred-tool search query (it must find `spawn_child_process` by its description). */
  search?: string;
}

/** The JSON object a tool result carries (MCP text content), if any. */
export function jsonIn(text: string): Record<string, unknown> | undefined {
  for (const candidate of [text, text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1)]) {
    try {
      const value: unknown = JSON.parse(candidate);
      if (typeof value === 'object' && value !== null && !Array.isArray(value))
        return value as Record<string, unknown>;
    } catch {
      // Not JSON: try the next reading.
    }
  }
  return undefined;
}

const toolNamed = (request: ModelRequest, name: string) => request.tools.find((tool) => tool.endsWith(name));

/** Every earlier tool result of the conversation, oldest first (both APIs resend the history). */
function history(request: ModelRequest): Record<string, unknown>[] {
  const body = request.body;
  const results: string[] = [];
  const walk = (value: unknown) => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === 'object') {
      const item = value as Record<string, unknown>;
      if (item.type === 'tool_result') results.push(JSON.stringify(item.content));
      else if (item.type === 'function_call_output') results.push(String(item.output));
      else Object.values(item).forEach(walk);
    }
  };
  walk(request.api === 'anthropic' ? body.messages : body.input);
  return results.map((text) => deepJson(text) ?? {}).filter((value) => Object.keys(value).length > 0);
}

/** The first JSON object found in `text` or in any string inside it. */
function deepJson(text: string): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return jsonIn(text);
  }
  const strings: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === 'string') strings.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(value);
  for (const s of strings) {
    const found = jsonIn(s);
    if (found !== undefined) return found;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function decide(options: DelegateOptions, request: ModelRequest): Reply {
  const spawn = toolNamed(request, 'spawn_child_process');
  const search = request.tools.find((tool) => tool === 'ToolSearch');
  if (spawn === undefined) {
    if (search === undefined) return { type: 'text', text: 'I have no libos tools.' };
    return {
      type: 'tool',
      name: search,
      input: { query: options.search ?? 'delegate a task to a subagent child process', max_results: 10 },
    };
  }
  const results = history(request);
  // A refused call ends the run with the refusal, rather than trying again until the deadline.
  const last = request.toolResults.at(-1) ?? '';
  const refused = results.at(-1)?.error ?? (/tool_use_error|^Error/.test(last) ? last : undefined);
  if (refused !== undefined) return { type: 'text', text: `A tool refused: ${JSON.stringify(refused)}` };
  const spawned = results.filter((r) => typeof r.pid === 'string' && typeof r.image === 'string');
  const waited = results.filter((r) => typeof r.result_oid === 'string');
  const read = results.filter((r) => 'payload' in r);
  const wait = toolNamed(request, 'wait_child_process');
  const readObject = toolNamed(request, 'read_object');
  // A deferred tool not loaded yet is searched for by what it does, as a model would.
  const find = (query: string): Reply =>
    search === undefined
      ? { type: 'text', text: `I have no tool to ${query}.` }
      : { type: 'tool', name: search, input: { query, max_results: 5 } };
  if (spawned.length < options.inputs.length) {
    const n = spawned.length;
    return {
      type: 'tool',
      name: spawn,
      input: { goal: `task ${n + 1}`, image: options.image, input: options.inputs[n] ?? null },
    };
  }
  if (waited.length < spawned.length) {
    if (wait === undefined) return find('wait for a child process to finish');
    return { type: 'tool', name: wait, input: { child_pid: spawned[waited.length]?.pid } };
  }
  if (read.length < waited.length) {
    if (readObject === undefined) return find("read a child process's result object");
    return { type: 'tool', name: readObject, input: { oid: waited[read.length]?.result_oid } };
  }
  return {
    type: 'text',
    text: `The children answered: ${read.map((r) => JSON.stringify(r.payload)).join(' | ')}`,
  };
}

/** One repeating turn: the whole delegation, decided per request. */
export function delegatingModel(options: DelegateOptions): Turn {
  return { repeat: true, reply: (request) => decide(options, request) };
}
