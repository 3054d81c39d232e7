import { type ToolName, toolsAllowed } from '@libos/protocol';
import type { ProcessClient } from '@libos/sdk';

/**
 * The tools the process `client` acts as may use (`toolsAllowed` of @libos/protocol, from its own
 * grants): one `get_process`, and one `list_child_processes` only when it cannot spawn (are
 * there children left to wait for?). What `libos mcp` lists and the shims allow.
 */
export async function allowedTools(client: ProcessClient, signal?: AbortSignal): Promise<ToolName[]> {
  const options = signal === undefined ? {} : { signal };
  const me = await client.getProcess({}, options);
  const offered = toolsAllowed(me, { hasChildren: false });
  if (offered.includes('wait_child_process')) return offered;
  const { children } = await client.listChildren({}, options);
  return toolsAllowed(me, { hasChildren: children.length > 0 });
}

/**
 * `allowedTools` for the process named by LIBOS_URL, LIBOS_PID and LIBOS_TOKEN; `undefined` when
 * the coordinator could not say (the kernel refuses what is not allowed anyway).
 */
export async function allowedToolsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): Promise<ToolName[] | undefined> {
  try {
    const { fromEnv } = await import('@libos/sdk');
    return await allowedTools(fromEnv(env), AbortSignal.timeout(10_000));
  } catch {
    return undefined;
  }
}
