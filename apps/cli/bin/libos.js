#!/usr/bin/env node
// `libos mcp` and `libos shim` are started once per agent session or child and must start at
// once: they load only their own library, not the whole command (libs/mcp "Starting fast").
const [command, ...rest] = process.argv.slice(2);
if (command === 'mcp' && rest.length === 0) await import('@libos/mcp/bin');
else if (command === 'shim') {
  const { shimMain } = await import('@libos/shim');
  process.exit(await shimMain(rest));
} else await import('../dist/main.js');
