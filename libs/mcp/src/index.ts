export { createMcpServer, serveMcpStdio } from './server.js';
export { callTool, describeTools, type McpToolDescription } from './tools.js';
