import { describe, expect, it } from 'vitest';
import { libosMcpAllowed, type ShimOptions } from '../src/index.js';

const options: ShimOptions = {
  resultFile: '/r',
  command: 'claude',
  writable: false,
  schemaCheck: true,
  libosMcp: true,
  extra: [],
};
const env = { LIBOS_URL: 'http://127.0.0.1:1', LIBOS_PID: 'p0000', LIBOS_TOKEN: 't' };

describe('libosMcpAllowed', () => {
  it('offers the tools the process may use, within --libos-tools; the image choice when unknown', async () => {
    const allowed = async () => ['get_process', 'process_exit'] as ('get_process' | 'process_exit')[];
    expect((await libosMcpAllowed(options, env, allowed))?.tools).toEqual(['get_process', 'process_exit']);
    const narrowed = { ...options, libosTools: ['process_exit', 'spawn_child_process'] };
    expect((await libosMcpAllowed(narrowed, env, allowed))?.tools).toEqual(['process_exit']);
    expect((await libosMcpAllowed(narrowed, env, async () => undefined))?.tools).toEqual([
      'process_exit',
      'spawn_child_process',
    ]);
    expect((await libosMcpAllowed(options, env, async () => undefined))?.tools).toBeUndefined();
    // Not a libos child, or opted out: no server, and nothing asked.
    const never = async () => {
      throw new Error('asked');
    };
    expect(await libosMcpAllowed(options, {}, never)).toBeUndefined();
    expect(await libosMcpAllowed({ ...options, libosMcp: false }, env, never)).toBeUndefined();
  });
});
