import { constants } from 'node:fs';
import { access, mkdtemp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { allowedToolsFromEnv } from '@libos/mcp/allowed';
import type { ToolName } from '@libos/protocol';
import type { ShimOptions } from './options.js';

// The libos MCP server wired into the agent CLI, so its model acts as this libos child: spawn,
// wait, message, exit. The server is `@libos/mcp`'s lean entry run by this same node (no `npx`, no
// PATH lookup: a child's PATH and cwd are the image's), and it takes LIBOS_URL, LIBOS_PID and
// LIBOS_TOKEN from the environment the CLI passes on, so no secret is ever put in argv.

export const LIBOS_SERVER = 'libos';
export const LIBOS_ENV = ['LIBOS_URL', 'LIBOS_PID', 'LIBOS_TOKEN'] as const;

export interface LibosMcp {
  command: string;
  args: string[];
  /** The tools offered; absent: every libos tool. */
  tools?: string[];
}

/** `@libos/mcp`'s built stdio entry (`dist/bin.js`), found beside this package's installation. */
export function libosMcpEntry(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@libos/mcp/package.json')), 'dist', 'bin.js');
}

/** The server to wire in, when this shim runs as a libos process and the image did not opt out. */
export function libosMcpFor(
  options: ShimOptions,
  env: NodeJS.ProcessEnv = process.env,
): LibosMcp | undefined {
  if (!options.libosMcp) return undefined;
  if (LIBOS_ENV.some((name) => (env[name] ?? '') === '')) return undefined;
  return {
    command: process.execPath,
    args: [libosMcpEntry()],
    ...(options.libosTools === undefined ? {} : { tools: options.libosTools }),
  };
}

/**
 * `libosMcpFor`, offering only the tools this process may use (`allowedTools` of @libos/mcp, from
 * its grants: no spawn tools without `process:spawn`), within `--libos-tools` when given. When the
 * coordinator cannot say, the image's choice stands (the server then fails to start anyway).
 */
export async function libosMcpAllowed(
  options: ShimOptions,
  env: NodeJS.ProcessEnv = process.env,
  lookup: (env: NodeJS.ProcessEnv) => Promise<ToolName[] | undefined> = allowedToolsFromEnv,
): Promise<LibosMcp | undefined> {
  const libos = libosMcpFor(options, env);
  if (libos === undefined) return undefined;
  const allowed = await lookup(env);
  if (allowed === undefined) return libos;
  const tools =
    libos.tools === undefined ? allowed : libos.tools.filter((t) => (allowed as string[]).includes(t));
  return { ...libos, tools };
}

/**
 * The CLI's environment. Both CLIs keep their state under HOME (`~/.claude.json`, `~/.codex`); a
 * HOME that is missing or not writable (a sandboxed uid's) gets a fresh directory under the temp
 * dir instead, so the CLI can start.
 */
export async function cliEnv(env: NodeJS.ProcessEnv = process.env): Promise<NodeJS.ProcessEnv> {
  const home = env.HOME;
  if (home !== undefined && home !== '') {
    try {
      await access(home, constants.W_OK);
      return env;
    } catch {
      // Not writable: use a private one below.
    }
  }
  return { ...env, HOME: await mkdtemp(join(tmpdir(), 'libos-shim-home-')) };
}
