import { closeSync, readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { keyringFilter, SyscallFilter } from '../src/index.js';

it('is a whole classic BPF program for x64 and arm64, each architecture a process can call through', () => {
  for (const arch of ['x64', 'arm64']) {
    const program = keyringFilter(arch)!;
    // load arch; per architecture: compare, load nr, one compare per call, allow; allow; refuse
    const calls = arch === 'x64' ? 6 + 3 : 3 + 3;
    expect(program.length).toBe(8 * (1 + 2 * 3 + calls + 2));
    // The last instruction returns SECCOMP_RET_ERRNO | EPERM, the one before SECCOMP_RET_ALLOW.
    expect(program.readUInt32LE(program.length - 4)).toBe(0x00050001);
    expect(program.readUInt32LE(program.length - 12)).toBe(0x7fff0000);
  }
  expect(keyringFilter('ppc64')).toBeUndefined();
});

it('gives each launch a descriptor that reads the whole program from its start', () => {
  const filter = SyscallFilter.forHost()!;
  const a = filter.open();
  expect(readFileSync(a)).toEqual(keyringFilter());
  // `a` is read to its end: the next launch's descriptor starts again at 0.
  const b = filter.open();
  expect(readFileSync(b)).toEqual(keyringFilter());
  closeSync(a);
  closeSync(b);
});
