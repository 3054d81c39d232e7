import { TOOL_NAMES, TOOLS, type ToolName } from '@libos/protocol';
import { LibosError, type ProcessClient } from '@libos/sdk';
import { z } from 'zod';

export interface McpToolDescription {
  name: ToolName;
  description: string;
  inputSchema: { type: 'object'; [key: string]: unknown };
}

/** The libos tools as MCP describes them: input schemas generated from the protocol's zod schemas. */
export function describeTools(): McpToolDescription[] {
  return TOOL_NAMES.map((name) => {
    const schema = z.toJSONSchema(TOOLS[name].args, { io: 'input', unrepresentable: 'any' }) as Record<
      string,
      unknown
    >;
    delete schema.$schema;
    return { name, description: TOOLS[name].description, inputSchema: { ...schema, type: 'object' } };
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
 * validates the arguments; a refusal becomes an MCP tool error carrying the libos error.
 * Blocking waits and receives are asked again across long-poll windows by the client.
 */
export async function callTool(
  client: ProcessClient,
  name: string,
  args: Record<string, unknown> | undefined,
  signal?: AbortSignal,
): Promise<McpToolResult> {
  if (!(TOOL_NAMES as string[]).includes(name)) {
    return errorResult({ code: 'not_found', message: `no tool ${name}` });
  }
  const tool = name as ToolName;
  try {
    const result = await client.forward(tool, args ?? {}, signal ? { signal } : {});
    const structured: Record<string, unknown> = { ...(result as Record<string, unknown>) };
    if (client.lastNotices.length > 0) structured.notices = client.lastNotices;
    return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
  } catch (error) {
    if (error instanceof LibosError) {
      return errorResult({
        code: error.code,
        message: error.message,
        ...(error.details ? { details: error.details } : {}),
      });
    }
    throw error;
  }
}

function errorResult(error: { code: string; message: string; details?: unknown }): McpToolResult {
  return { content: [{ type: 'text', text: JSON.stringify({ error }) }], isError: true };
}
