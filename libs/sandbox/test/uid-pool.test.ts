import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseUidRange, UidPool } from '../src/index.js';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));
const fresh = () => {
  dir = mkdtempSync(join(tmpdir(), 'uid-pool-'));
  return dir;
};

describe('UidPool', () => {
  it('never hands one uid to two holders, across pools sharing the lock directory', () => {
    const locks = fresh();
    const a = new UidPool({ first: 30_000, last: 30_009 }, locks);
    const b = new UidPool({ first: 30_000, last: 30_009 }, locks);
    const taken = [...Array(5)].flatMap(() => [a.acquire(), b.acquire()]);
    expect(new Set(taken).size).toBe(10);
    expect(() => a.acquire()).toThrow('every child uid of 30000-30009 is in use on this host');
    // Released: parked for the same pool's next child, still locked against the others.
    a.release(taken[0]!);
    expect(() => b.acquire()).toThrow(/in use/);
    expect(a.acquire()).toBe(taken[0]);
    // Retired: back to the host.
    a.retire(taken[0]!);
    expect(b.acquire()).toBe(taken[0]);
    expect(readFileSync(join(locks, String(taken[0])), 'utf8')).toBe(String(process.pid));
  });

  it('takes over a lock whose owner is dead, never one whose owner lives', () => {
    const locks = fresh();
    writeFileSync(join(locks, '30100'), '999999999'); // no such process
    writeFileSync(join(locks, '30101'), '1'); // init: alive
    const pool = new UidPool({ first: 30_100, last: 30_101 }, locks);
    expect(pool.acquire()).toBe(30_100);
    expect(() => pool.acquire()).toThrow(/in use/);
  });

  it('reads ranges and refuses bad ones', () => {
    expect(parseUidRange('20000-29999')).toEqual({ first: 20_000, last: 29_999 });
    expect(() => parseUidRange('0-10')).toThrow(/1000 <= FIRST/);
    expect(() => parseUidRange('3000-2000')).toThrow(/FIRST <= LAST/);
    expect(() => parseUidRange('many')).toThrow(/FIRST-LAST/);
  });
});
