export { createMcpServer, SERVER_INFO, type StdioOptions, serveMcpStdio } from './server.js';
export { callTool, describeTools, type McpToolDescription, type McpToolResult } from './tools.js';
