import type { Readable, Writable } from 'node:stream';
import { fromEnv, type ProcessClient } from '@libos/sdk';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { allowedTools } from './allowed.js';
import { CAPABILITIES, SERVER_INFO } from './info.js';
import { callTool, describeTools } from './tools.js';

export { SERVER_INFO };

export interface McpServerOptions {
  /**
   * `allowed` (default): list only the tools the process may use (`allowedTools`, asked once, at
   * the first `tools/list`; if the coordinator cannot say, every tool); `all`: every libos tool.
   * Either way the coordinator authorises each call.
   */
  tools?: 'allowed' | 'all';
  /** Where a failed look-up is reported (default: stderr, which agent CLIs keep as the server's log). */
  warn?: (message: string) => void;
}

/** An MCP server offering the libos tools, every call made as the process `client` acts for. */
export function createMcpServer(client: ProcessClient, options: McpServerOptions = {}): Server {
  const server = new Server(SERVER_INFO, { capabilities: CAPABILITIES });
  const all = describeTools();
  const warn = options.warn ?? ((message: string) => process.stderr.write(`libos mcp: ${message}\n`));
  let listed: Promise<typeof all> | undefined;
  const list = () => {
    if (options.tools === 'all') return Promise.resolve(all);
    listed ??= allowedTools(client).then(
      (names) => all.filter((tool) => names.includes(tool.name)),
      (error: unknown) => {
        warn(`listing every tool: the process's grants could not be read (${String(error)})`);
        return all;
      },
    );
    return listed;
  };
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: await list() }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) =>
    callTool(client, request.params.name, request.params.arguments, extra.signal),
  );
  return server;
}

export interface StdioOptions {
  stdin?: Readable;
  stdout?: Writable;
}

/**
 * `libos mcp`: serve on stdio as the process named by LIBOS_URL, LIBOS_PID and LIBOS_TOKEN.
 * Resolves when the client goes away (stdin ends): calls still in flight, such as a blocking
 * wait, are aborted then, so the server never outlives its client.
 */
export async function serveMcpStdio(
  env: NodeJS.ProcessEnv = process.env,
  options: StdioOptions = {},
): Promise<void> {
  const stdin = options.stdin ?? process.stdin;
  const server = createMcpServer(fromEnv(env));
  const closed = new Promise<void>((resolve) => {
    server.onclose = resolve;
  });
  await server.connect(new StdioServerTransport(stdin, options.stdout ?? process.stdout));
  // The SDK's stdio transport does not watch for the end of its input.
  stdin.once('end', () => void server.close());
  await closed;
}
