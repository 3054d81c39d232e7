#!/usr/bin/env node
// `libos-mcp`: the MCP server alone, without the rest of the `libos` command, so an agent CLI
// that starts it per session gets `initialize` answered quickly.
import { serveMcpStdio } from './server.js';

try {
  await serveMcpStdio();
} catch (error) {
  process.stderr.write(`libos mcp: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
