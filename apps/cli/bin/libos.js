#!/usr/bin/env node
// `libos mcp` is started by agent CLIs once per session and must answer at once: it loads only
// the MCP server's lean entry, not the whole command (libs/mcp, "Starting fast").
if (process.argv[2] === 'mcp' && process.argv.length === 3) await import('@libos/mcp/bin');
else await import('../dist/main.js');
