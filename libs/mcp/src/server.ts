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

/** After its input ends, how long the server still answers the requests it already had. */
export const END_GRACE_MS = 1_000;

/**
 * `libos mcp`: serve on stdio as the process named by LIBOS_URL, LIBOS_PID and LIBOS_TOKEN.
 * Resolves when the client goes away (stdin ends): the requests it sent before are answered if
 * they can be within `END_GRACE_MS` (a script may pipe its requests and close), and what is
 * still in flight then, such as a blocking wait, is aborted, so the server never outlives its
 * client by more.
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
  const transport = new StdioServerTransport(stdin, options.stdout ?? process.stdout);
  // Before connecting: the Server chains a handler set before it, and input already waiting is
  // read as soon as it connects.
  const unanswered = trackRequests(transport);
  await server.connect(transport);
  // The SDK's stdio transport does not watch for the end of its input.
  stdin.once('end', () => {
    void Promise.race([unanswered.none(), new Promise((resolve) => setTimeout(resolve, END_GRACE_MS))]).then(
      () => server.close(),
    );
  });
  await closed;
}

/** The requests a transport has received and not yet answered (set up before `Server.connect`). */
function trackRequests(transport: StdioServerTransport): { none: () => Promise<void> } {
  const open = new Set<string | number>();
  let idle: (() => void) | undefined;
  const received = transport.onmessage;
  transport.onmessage = (message) => {
    if ('method' in message && 'id' in message) open.add(message.id);
    received?.(message);
  };
  const send = transport.send.bind(transport);
  transport.send = (message) => {
    if (
      !('method' in message) &&
      'id' in message &&
      message.id !== undefined &&
      open.delete(message.id) &&
      open.size === 0
    )
      idle?.();
    return send(message);
  };
  return {
    none: () =>
      open.size === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            idle = resolve;
          }),
  };
}
