import { type CapabilityGrant, SPAWN_RESOURCE, SPAWN_RIGHT } from './capability.js';
import { TOOL_NAMES, type ToolName } from './tools.js';

// Which tools a process can use at all, from its grants: what an agent is offered (the MCP tool
// list, an agent CLI's allowed tools), so it is not shown tools the kernel will refuse. The kernel
// still authorises every call (libs/kernel/src/lua/lib_caps.lua); this mirrors its `holds`.

/** Tools that launch a child: the kernel asks for `process:spawn` (use). */
export const SPAWN_TOOLS: readonly ToolName[] = [
  'spawn_child_process',
  'fork_child_process',
  'spawn_children',
];
/** Tools about the caller's own children: of use only to a process that has or can have some. */
export const CHILD_TOOLS: readonly ToolName[] = [
  'list_child_processes',
  'wait_child_process',
  'wait_children',
  'signal_child_process',
  'merge_child_memory',
];

function plainPath(path: string): boolean {
  if (path.includes('\0')) return false;
  return path.split('/').every((segment) => segment !== '.' && segment !== '..');
}

/** lib_caps.lua `resource_covers`: exact, a trailing `*` prefix, or `path:<dir>` over its subtree. */
export function resourceCovers(held: string, wanted: string): boolean {
  if (held === wanted) return true;
  const isPath = wanted.startsWith('path:');
  if (isPath && !plainPath(wanted)) return false;
  if (held.endsWith('*')) return wanted.startsWith(held.slice(0, -1));
  if (isPath && held.startsWith('path:/') && plainPath(held)) {
    const dir = held.slice(5).replace(/\/+$/, '');
    const path = wanted.slice(5);
    return path === dir || path.startsWith(`${dir}/`);
  }
  return false;
}

/** lib_caps.lua `holds`: a live grant covers the resource with the right (`*` covers every right). */
export function grantsHold(
  grants: readonly Pick<CapabilityGrant, 'resource' | 'rights' | 'expires_at'>[],
  resource: string,
  right: string,
  now: number = Date.now(),
): boolean {
  return grants.some(
    (grant) =>
      (grant.expires_at === null || Date.parse(grant.expires_at) > now) &&
      resourceCovers(grant.resource, resource) &&
      (grant.rights.includes('*') || grant.rights.includes(right)),
  );
}

/**
 * The tools a process may use, in `TOOL_NAMES` order: the spawn tools only with `process:spawn`
 * (use); the child tools only when it can spawn or already has children (a grant that expired
 * leaves its children to wait for). Every other tool acts on the caller itself, its mailbox or
 * objects it holds handles to, and is always offered.
 */
export function toolsAllowed(
  process: { capabilities: readonly Pick<CapabilityGrant, 'resource' | 'rights' | 'expires_at'>[] },
  options: { hasChildren: boolean; now?: number },
): ToolName[] {
  const canSpawn = grantsHold(process.capabilities, SPAWN_RESOURCE, SPAWN_RIGHT, options.now);
  return TOOL_NAMES.filter((name) => {
    if (SPAWN_TOOLS.includes(name)) return canSpawn;
    if (CHILD_TOOLS.includes(name)) return canSpawn || options.hasChildren;
    return true;
  });
}
