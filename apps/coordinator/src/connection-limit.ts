import { readFileSync } from 'node:fs';

/** Descriptors left for Redis, files and the coordinator's own work when the limit is derived. */
export const RESERVED_DESCRIPTORS = 1024;

/**
 * The connections a coordinator accepts at once (Node's `maxConnections`: one past it is closed
 * as it is accepted): LIBOS_MAX_CONNECTIONS, else the process's open-files limit (which Node
 * raises to the hard limit as it starts) less RESERVED_DESCRIPTORS, at least 64. Clients include
 * children, and a child that opens connections until the descriptors run out would otherwise
 * leave the coordinator none to reconnect to Redis with. Undefined (no limit) where the
 * open-files limit cannot be read or is unlimited.
 */
export function connectionLimit(
  configured: number | undefined,
  openFiles: number | undefined,
): number | undefined {
  if (configured !== undefined) return configured;
  if (openFiles === undefined) return undefined;
  return Math.max(64, openFiles - RESERVED_DESCRIPTORS);
}

/** This process's soft limit on open files (Linux: /proc/self/limits); undefined if unknown or unlimited. */
export function openFilesLimit(limits?: string): number | undefined {
  let text = limits;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return undefined;
    }
  }
  const soft = /^Max open files\s+(\d+)\s/m.exec(text)?.[1];
  return soft === undefined ? undefined : Number(soft);
}
