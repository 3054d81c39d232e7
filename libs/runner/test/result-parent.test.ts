// Where a launch's private result directory is made: `resultParent` when given (the worker puts
// it in memory), and which directories `memoryBacked` takes for that.
import { execFileSync } from 'node:child_process';
import { readdirSync, statfsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contractRun, memoryBacked, RESULT_DIR_PREFIX } from '../src/index.js';
import { scratch, sh, withTmpdir } from './helpers.js';

const TMPFS_MAGIC = 0x01021994;
let side: Awaited<ReturnType<typeof scratch>>;
let memory: string;
beforeAll(async () => {
  side = await scratch();
  // A tmpfs of 1 MiB of our own (the tests run as root, as the sandbox's do).
  memory = side.file('memory');
  execFileSync('mkdir', [memory]);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', memory]);
});
afterAll(async () => {
  execFileSync('umount', [memory]);
  await side.cleanup();
});

describe('memoryBacked', () => {
  it('takes a tmpfs with room for what is needed, and not one without', () => {
    expect(memoryBacked(memory, 512 * 1024)).toBe(memory);
    expect(memoryBacked(memory, 2 * 1024 * 1024)).toBeUndefined();
  });

  it('does not take a disk directory, nor one that is not there', () => {
    const checkout = fileURLToPath(new URL('.', import.meta.url));
    expect(statfsSync(checkout).type).not.toBe(TMPFS_MAGIC); // the checkout is on a disk
    expect(memoryBacked(checkout, 1)).toBeUndefined();
    expect(memoryBacked(side.file('no-such-dir'), 1)).toBeUndefined();
  });
});

describe('contractRun with resultParent', () => {
  it('makes the private result directory there, and removes it after', async () => {
    const result = await contractRun({
      ...sh(
        `read -r request; printf '{"version":1,"request_id":"rp","status":"completed","output":"%s"}' "$1" > "$1"`,
      ),
      input: {},
      kind: 'probe',
      id: 'rp',
      resultParent: memory,
    });
    expect(result.terminal).toEqual({ type: 'captured' });
    expect(String(result.report)).toMatch(new RegExp(`^${memory}/${RESULT_DIR_PREFIX}[^/]+/result\\.json$`));
    expect(readdirSync(memory)).toEqual([]);
  });

  it('falls back to TMPDIR when the directory cannot be made there (gone, or full)', async () => {
    const tmp = side.file('tmp');
    execFileSync('mkdir', [tmp]);
    const result = await withTmpdir(tmp, () =>
      contractRun({
        ...sh(
          `read -r request; printf '{"version":1,"request_id":"rp","status":"completed","output":"%s"}' "$1" > "$1"`,
        ),
        input: {},
        kind: 'probe',
        id: 'rp',
        resultParent: side.file('no-such-dir'),
      }),
    );
    expect(result.terminal).toEqual({ type: 'captured' });
    expect(String(result.report)).toMatch(new RegExp(`^${tmp}/${RESULT_DIR_PREFIX}[^/]+/result\\.json$`));
  });

  it('refuses a relative one as invalid options', async () => {
    await expect(
      contractRun({ ...sh('exit 0'), input: {}, kind: 'probe', id: 'rp', resultParent: 'relative/dir' }),
    ).rejects.toThrow(/resultParent: an absolute path|an absolute path/);
  });
});
