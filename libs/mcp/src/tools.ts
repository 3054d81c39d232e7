import { noticeSchema, TOOL_NAMES, TOOLS, type ToolName } from '@libos/protocol';
import { LibosError, type ProcessClient } from '@libos/sdk';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

type JsonSchemaObject = { type: 'object'; [key: string]: unknown };

export interface McpToolDescription {
  name: ToolName;
  description: string;
  inputSchema: JsonSchemaObject;
  outputSchema: JsonSchemaObject;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
}

/** Tools that change nothing (a blocking wait records the caller's wait state, so it is not one). */
const READ_ONLY: readonly ToolName[] = ['list_child_processes', 'read_object', 'get_process'];
/** Tools that can end work for good. */
const DESTRUCTIVE: readonly ToolName[] = ['signal_child_process', 'process_exit'];

/**
 * Words an agent searches for. Claude Code offers MCP tools as deferred: the model first finds
 * them by a keyword search over names and descriptions ("delegate a task to a subagent"), so
 * each description says it is libos and what it is for, beyond the protocol's one line.
 */
const SEARCH_HINTS: Partial<Record<ToolName, string>> = {
  spawn_child_process:
    'Delegate a task to a new libos child process (a subagent) that runs an image with a goal and an input; returns its pid. Then wait_child_process for it and read_object its result_oid.',
  fork_child_process:
    'Delegate to a libos child process (a subagent) that starts from a copy of this process.',
  spawn_children:
    'Delegate many tasks at once: one call creates a batch of libos child processes (subagents), each with its own goal and input; all are created or none. Then wait_children for them.',
  wait_children:
    'Wait for any (or all) of several delegated libos child processes (subagents) to finish: which ended, with each status, outcome and result_oid.',
  wait_child_process:
    'Wait for a delegated libos child process (subagent) to finish: its status, outcome and result_oid, which read_object reads.',
  list_child_processes: 'List the libos child processes (subagents) this process delegated to.',
  read_object:
    "Read a libos object, such as a child process's result (the result_oid of wait_child_process).",
  process_exit: 'Finish this libos process with a result for its parent.',
};

/** The protocol's description, then what makes the tool findable. */
export function toolDescription(name: ToolName): string {
  const hint = SEARCH_HINTS[name];
  return hint === undefined
    ? `libos: ${TOOLS[name].description}`
    : `libos: ${TOOLS[name].description} ${hint}`;
}

/** A successful answer carries the coordinator's notices (message ids due to the caller) beside the result. */
const noticesShape = { notices: z.array(noticeSchema).optional() };

function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchemaObject {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return { ...json, type: 'object' };
}

/**
 * The libos tools as MCP describes them, generated from the protocol's zod schemas: the input as
 * a caller may send it (defaults optional), the output as the coordinator answers it.
 */
export function describeTools(): McpToolDescription[] {
  return TOOL_NAMES.map((name) => {
    const readOnly = READ_ONLY.includes(name);
    const destructive = DESTRUCTIVE.includes(name);
    return {
      name,
      description: toolDescription(name),
      inputSchema: jsonSchemaOf(TOOLS[name].args, 'input'),
      outputSchema: jsonSchemaOf(TOOLS[name].result.extend(noticesShape), 'output'),
      ...((readOnly || destructive) && {
        annotations: readOnly ? { readOnlyHint: true } : { readOnlyHint: false, destructiveHint: true },
      }),
    };
  });
}

export interface McpToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/**
 * One tool call, made by the process the client acts as. The coordinator authorises it and
 * validates the arguments; a refusal becomes an MCP tool error carrying the libos error, so the
 * agent can read it and correct itself. An unknown tool is a protocol error, as MCP specifies.
 * Blocking waits and receives are asked again across long-poll windows by the client.
 */
export async function callTool(
  client: ProcessClient,
  name: string,
  args: Record<string, unknown> | undefined,
  signal?: AbortSignal,
): Promise<McpToolResult> {
  if (!(TOOL_NAMES as string[]).includes(name)) {
    throw new McpError(ErrorCode.InvalidParams, `no tool named ${name}`);
  }
  try {
    const { data, notices } = await client.forward(name as ToolName, args ?? {}, signal ? { signal } : {});
    const structured: Record<string, unknown> = { ...(data as Record<string, unknown>) };
    if (notices.length > 0) structured.notices = notices;
    return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
  } catch (error) {
    if (!(error instanceof LibosError)) throw error;
    const body = {
      code: error.code,
      message: error.message,
      ...(error.details ? { details: error.details } : {}),
    };
    return { content: [{ type: 'text', text: JSON.stringify({ error: body }) }], isError: true };
  }
}
