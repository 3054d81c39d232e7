/**
 * Commands whose whole argv belongs to a library entry (their own options, `--` passthrough,
 * `--help`): dispatched before commander parses anything.
 */
export const PASSTHROUGH_COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  async shim(args) {
    const { runShim } = await import('@libos/shim');
    const [dialect, ...rest] = args;
    if (dialect !== 'claude' && dialect !== 'codex') {
      process.stderr.write('usage: libos shim claude|codex --result-file FILE [options] [-- args]\n');
      return 2;
    }
    return runShim(dialect, rest);
  },
  async viz(args) {
    const { vizMain } = await import('@libos/viz');
    return vizMain(args);
  },
  async mcp() {
    const { serveMcpFast } = await import('@libos/mcp');
    await serveMcpFast();
    return 0;
  },
};

export const PASSTHROUGH_HELP = `
Also:
  shim claude|codex --result-file FILE [options] [-- args]
                     run an agent CLI as a contract child (see libs/shim)
  viz JOURNAL [OUT.html] [--watch]
                     render a workflow journal as a standalone HTML ledger
  mcp                an MCP stdio server offering the libos tools, acting as the
                     process named by LIBOS_URL, LIBOS_PID and LIBOS_TOKEN`;
