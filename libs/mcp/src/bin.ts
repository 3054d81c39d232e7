#!/usr/bin/env node
// `libos mcp` / `libos-mcp`: the MCP server alone, without the rest of the `libos` command. Only
// `fast-start` is imported up front, so `initialize` is answered before the server has loaded.
import { serveMcpFast } from './fast-start.js';

try {
  await serveMcpFast();
} catch (error) {
  process.stderr.write(`libos mcp: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
