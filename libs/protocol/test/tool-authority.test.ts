import { describe, expect, it } from 'vitest';
import { grantsHold, resourceCovers, TOOL_NAMES, toolsAllowed } from '../src/index.js';

const grant = (resource: string, rights: string[], expires_at: string | null = null) => ({
  resource,
  rights,
  expires_at,
});

describe('which tools a process may use (mirroring the kernel)', () => {
  it('resourceCovers: exact, a trailing * prefix, a path directory over its subtree only', () => {
    expect(resourceCovers('process:spawn', 'process:spawn')).toBe(true);
    expect(resourceCovers('process:*', 'process:spawn')).toBe(true);
    expect(resourceCovers('*', 'process:spawn')).toBe(true);
    expect(resourceCovers('image:*', 'process:spawn')).toBe(false);
    expect(resourceCovers('path:/srv/data', 'path:/srv/data/x')).toBe(true);
    expect(resourceCovers('path:/srv/data', 'path:/srv/database')).toBe(false);
    expect(resourceCovers('path:/srv/*', 'path:/srv/data/../../etc')).toBe(false);
  });

  it('grantsHold: a live grant with the right, or *; an expired one holds nothing', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(grantsHold([grant('process:spawn', ['use'])], 'process:spawn', 'use', now)).toBe(true);
    expect(grantsHold([grant('process:spawn', ['*'])], 'process:spawn', 'use', now)).toBe(true);
    expect(grantsHold([grant('process:spawn', ['read'])], 'process:spawn', 'use', now)).toBe(false);
    expect(
      grantsHold([grant('process:spawn', ['use'], '2026-01-01T00:00:01Z')], 'process:spawn', 'use', now),
    ).toBe(true);
    expect(
      grantsHold([grant('process:spawn', ['use'], '2025-12-31T23:59:59Z')], 'process:spawn', 'use', now),
    ).toBe(false);
  });

  it('toolsAllowed: spawn tools need process:spawn; child tools need it or children; the rest always', () => {
    const spawner = { capabilities: [grant('process:spawn', ['use'])] };
    const bound = { capabilities: [grant('image:*', ['read'])] };
    expect(toolsAllowed(spawner, { hasChildren: false })).toEqual(TOOL_NAMES);
    const alone = toolsAllowed(bound, { hasChildren: false });
    expect(alone).not.toContain('spawn_child_process');
    expect(alone).not.toContain('fork_child_process');
    expect(alone).not.toContain('wait_child_process');
    expect(alone).not.toContain('spawn_children');
    expect(alone).not.toContain('wait_children');
    expect(alone).toEqual(
      expect.arrayContaining(['process_exit', 'get_process', 'send_process_message', 'read_object']),
    );
    expect(toolsAllowed(bound, { hasChildren: true })).toEqual(
      TOOL_NAMES.filter((n) => !['spawn_child_process', 'fork_child_process', 'spawn_children'].includes(n)),
    );
  });
});
