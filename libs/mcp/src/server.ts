import { fromEnv, type ProcessClient } from '@libos/sdk';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { callTool, describeTools } from './tools.js';

/** An MCP server offering the libos tools, every call made as the process `client` acts for. */
export function createMcpServer(client: ProcessClient): Server {
  const server = new Server({ name: 'libos', version: '0.1.0' }, { capabilities: { tools: {} } });
  const tools = describeTools();
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) =>
    callTool(client, request.params.name, request.params.arguments, extra.signal),
  );
  return server;
}

/** `libos mcp`: serve on stdio as the process named by LIBOS_URL, LIBOS_PID and LIBOS_TOKEN. */
export async function serveMcpStdio(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const server = createMcpServer(fromEnv(env));
  const transport = new StdioServerTransport();
  await server.connect(transport);
  await new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
  });
}
