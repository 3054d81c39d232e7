import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readImageFile } from '../src/commands/images.js';
import { LIBOS_BIN, resolveLibosCommand } from '../src/commands/libos-command.js';

describe('images whose command is libos', () => {
  it('run this installation by absolute path, with this node; other commands are left alone', async () => {
    expect(existsSync(LIBOS_BIN)).toBe(true);
    const { claude } = await readImageFile(
      new URL('../../../examples/images/claude.json', import.meta.url).pathname,
    );
    const resolved = resolveLibosCommand(claude ?? { command: '', args: [] });
    expect(resolved.command).toBe(process.execPath);
    expect(resolved.args).toEqual([LIBOS_BIN, 'shim', 'claude', '--result-file', '{result_file}']);
    expect(resolved.kind).toBe('explore');
    const other = { command: 'sh', args: ['x.sh', '{result_file}'] };
    expect(resolveLibosCommand(other)).toBe(other);
  });
});
