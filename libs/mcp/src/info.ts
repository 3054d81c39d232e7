// What `initialize` answers, kept free of imports so the lean entry can answer it before the
// server (the MCP SDK, zod, the libos client) has loaded. test/fast-start.test.ts checks both
// against the SDK's own answer.

export const SERVER_INFO = { name: 'libos', version: '0.1.0' } as const;

/** The SDK's `SUPPORTED_PROTOCOL_VERSIONS`, newest first (@modelcontextprotocol/sdk 1.32.2). */
export const PROTOCOL_VERSIONS = [
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
  '2024-10-07',
] as const;

export const CAPABILITIES = { tools: {} } as const;

/** The `initialize` result for a client asking for `requested`: that version if supported, else the newest. */
export function initializeResult(requested: unknown) {
  const version = (PROTOCOL_VERSIONS as readonly unknown[]).includes(requested)
    ? requested
    : PROTOCOL_VERSIONS[0];
  return { protocolVersion: version as string, capabilities: CAPABILITIES, serverInfo: SERVER_INFO };
}

/** `PID_PATTERN` of `@libos/protocol`, so a bad environment is refused before anything loads. */
const PID_PATTERN = /^p[0-9a-z]{4,32}(\.[1-9][0-9]{0,15})?$/;

/** The names of the three variables that are missing or malformed (what `fromEnv` would refuse). */
export function badEnvNames(env: NodeJS.ProcessEnv): string[] {
  const bad: string[] = [];
  try {
    const url = new URL(env.LIBOS_URL ?? '');
    if (url.protocol !== 'http:' && url.protocol !== 'https:') bad.push('LIBOS_URL');
  } catch {
    bad.push('LIBOS_URL');
  }
  if (!PID_PATTERN.test(env.LIBOS_PID ?? '')) bad.push('LIBOS_PID');
  if ((env.LIBOS_TOKEN ?? '') === '') bad.push('LIBOS_TOKEN');
  return bad;
}

export const PID_PATTERN_SOURCE = PID_PATTERN.source;
