import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeResultAtomic } from '../src/index.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'contract-atomic-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('writeResultAtomic', () => {
  it('writes the document and one newline, leaving no sibling', async () => {
    const path = join(dir, 'result.json');
    await writeResultAtomic(path, { version: 1, request_id: 'r', status: 'no_report' });
    expect(await readFile(path, 'utf8')).toBe('{"version":1,"request_id":"r","status":"no_report"}\n');
    expect(await readdir(dir)).toEqual(['result.json']);
  });

  it('replaces a stale file', async () => {
    const path = join(dir, 'result.json');
    await writeFile(path, 'stale');
    await writeResultAtomic(path, { a: 1 });
    expect(await readFile(path, 'utf8')).toBe('{"a":1}\n');
  });

  it('removes its sibling when the rename fails, and rethrows', async () => {
    const path = join(dir, 'result.json');
    await mkdir(path);
    await writeFile(join(path, 'occupied'), 'x'); // a non-empty directory cannot be renamed over
    await expect(writeResultAtomic(path, { a: 1 })).rejects.toThrow();
    expect((await readdir(dir)).sort()).toEqual(['result.json']);
  });

  it('fails when the directory does not exist', async () => {
    await expect(writeResultAtomic(join(dir, 'missing', 'result.json'), {})).rejects.toThrow(/ENOENT/);
  });
});
