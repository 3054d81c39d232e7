import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partEnvironment } from '../src/cluster/embedded.js';
import { ensureAdminToken, ensureRedisPassword } from '../src/cluster/state-dir.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'libos-state-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});
const mode = async (path: string) => (await stat(path)).mode & 0o777;

describe('the state directory’s secrets', () => {
  it('makes the Redis password once (32 random bytes, base64url, 0600) and reuses it', async () => {
    const dir = join(root, 'reuse');
    const first = await ensureRedisPassword(dir);
    expect(first.file).toBe(join(dir, 'redis-password'));
    expect(first.password).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await mode(first.file)).toBe(0o600);
    expect(await mode(dir)).toBe(0o700);
    expect((await ensureRedisPassword(dir)).password).toBe(first.password);
    expect((await ensureRedisPassword(join(root, 'other'))).password).not.toBe(first.password);
  });

  it('narrows a secret file or state directory left with a wider mode', async () => {
    const dir = join(root, 'loose');
    const { file, password } = await ensureRedisPassword(dir);
    await chmod(file, 0o644);
    await chmod(dir, 0o755);
    expect((await ensureRedisPassword(dir)).password).toBe(password);
    expect(await mode(file)).toBe(0o600);
    expect(await mode(dir)).toBe(0o700);
  });

  it('keeps the operator’s LIBOS_ADMIN_TOKEN in admin-token (0600), else makes one', async () => {
    const dir = join(root, 'admin');
    const given = await ensureAdminToken(dir, { LIBOS_ADMIN_TOKEN: 'operator-token-0123456789abcdef' });
    expect(given.token).toBe('operator-token-0123456789abcdef');
    expect((await readFile(given.file, 'utf8')).trim()).toBe(given.token);
    expect(await mode(given.file)).toBe(0o600);
    const fresh = join(root, 'admin-fresh');
    const made = await ensureAdminToken(fresh, {});
    expect(made.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await ensureAdminToken(fresh, {})).token).toBe(made.token);
    await writeFile(made.file, 'short\n');
    expect((await ensureAdminToken(fresh, {})).token).not.toBe('short');
  });
});

describe('partEnvironment', () => {
  it('drops secrets and the Redis settings always, other LIBOS_* unless kept, and puts its own on top', () => {
    const operator = {
      PATH: '/bin',
      HOME: '/home/op',
      LIBOS_ADMIN_TOKEN: 'secret',
      LIBOS_ADMIN_TOKEN_FILE: '/secret',
      LIBOS_TOKEN: 'p1.secret',
      LIBOS_REDIS_URL: 'redis://:pw@elsewhere',
      LIBOS_REDIS_USERNAME: 'someone',
      LIBOS_POOLS: 'gpu',
      LIBOS_HOME: '/state',
      UNSET: undefined,
    };
    expect(
      partEnvironment(operator, (name) => name === 'LIBOS_POOLS', {
        LIBOS_REDIS_URL: '/sock',
        LIBOS_URL: 'u',
      }),
    ).toEqual({
      PATH: '/bin',
      HOME: '/home/op',
      LIBOS_POOLS: 'gpu',
      LIBOS_REDIS_URL: '/sock',
      LIBOS_URL: 'u',
    });
    expect(partEnvironment(operator, () => true, {})).toEqual({
      PATH: '/bin',
      HOME: '/home/op',
      LIBOS_POOLS: 'gpu',
      LIBOS_HOME: '/state',
    });
  });
});
