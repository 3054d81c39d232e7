export { allowedTools, allowedToolsFromEnv } from './allowed.js';
export { type FastStartOptions, serveMcpFast } from './fast-start.js';
export { badEnvNames, initializeResult, PID_PATTERN_SOURCE, PROTOCOL_VERSIONS } from './info.js';
export {
  createMcpServer,
  END_GRACE_MS,
  type McpServerOptions,
  SERVER_INFO,
  type StdioOptions,
  serveMcpStdio,
} from './server.js';
export {
  callTool,
  describeTools,
  type McpToolDescription,
  type McpToolResult,
  toolDescription,
} from './tools.js';
