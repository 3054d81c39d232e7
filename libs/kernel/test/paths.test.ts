import { HTTP_STATUS_BY_CODE } from '@libos/protocol';
import { describe, expect, it } from 'vitest';
import { IMAGE, keysMatching, refusal, root, runningChild, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;

const SPAWN = { resource: 'process:spawn', rights: ['use'], delegable: true };

/** Every key of the caller's tree with its content: a refusal must leave all of it as it was. */
async function treeState(pid: string): Promise<Record<string, unknown>> {
  const keys = (await keysMatching(env, `${k().keys.treeOf(pid)}*`)).sort();
  const state: Record<string, unknown> = {};
  for (const key of keys) {
    const type = await env.redis.type(key);
    if (type === 'hash') state[key] = await env.redis.hgetall(key);
    else if (type === 'zset') state[key] = await env.redis.zrange(key, 0, -1, 'WITHSCORES');
    else if (type === 'set') state[key] = (await env.redis.smembers(key)).sort();
    else if (type === 'string') state[key] = await env.redis.get(key);
    else state[key] = type;
  }
  return state;
}

type LaunchExtra = Record<string, unknown>;

/** A spawn (or fork) of `parent` that must be refused and change nothing: rows, children, keys. */
async function refusedUnchanged(parent: string, extra: LaunchExtra, tool: 'spawn' | 'fork' = 'spawn') {
  const children = (await k().tools.list_child_processes({ pid: parent }, {})).children.length;
  const row = await k().admin.getProcess(parent);
  const launches = env.launches.length;
  const before = await treeState(parent);
  const args = { goal: 'g', ...extra };
  const error = await refusal(
    tool === 'spawn'
      ? k().tools.spawn_child_process({ pid: parent }, args)
      : k().tools.fork_child_process({ pid: parent }, args),
  );
  expect(await treeState(parent)).toEqual(before);
  expect((await k().tools.list_child_processes({ pid: parent }, {})).children).toHaveLength(children);
  expect(await k().admin.getProcess(parent)).toEqual(row);
  expect(env.launches).toHaveLength(launches);
  return error;
}

async function spawnView(parent: string, extra: LaunchExtra) {
  const spawned = await k().tools.spawn_child_process({ pid: parent }, { goal: 'g', ...extra });
  return k().admin.getProcess(spawned.pid);
}

const outside = (what: string, path: string, right: string, cwd = '/work/a') =>
  `${what} ${path} is outside the parent's cwd ${cwd} and no live path: grant with ${right} covers it`;

describe('paths confined to the parent cwd', () => {
  it('refuses an absolute working_directory or inherited path outside the parent cwd, / included', async () => {
    const parent = await root(env, { cwd: '/work/a' });
    const etc = await refusedUnchanged(parent.pid, { working_directory: '/etc' });
    expect([etc.code, etc.reason]).toEqual(['permission_denied', 'path']);
    expect(etc.message).toBe(outside('working_directory', '/etc', 'write'));
    expect(etc.details).toMatchObject({ path: '/etc', cwd: '/work/a', right: 'write' });
    const passwd = await refusedUnchanged(parent.pid, { inherited_paths: ['/etc/passwd'] });
    expect([passwd.code, passwd.reason]).toEqual(['permission_denied', 'path']);
    expect(passwd.message).toBe(outside('inherited path', '/etc/passwd', 'read'));
    const slash = await refusedUnchanged(parent.pid, { working_directory: '/' });
    expect(slash.message).toBe(outside('working_directory', '/', 'write'));
    const slashPath = await refusedUnchanged(parent.pid, {
      inherited_paths: [{ path: '/', kind: 'dir', access: 'write' }],
    });
    expect(slashPath.message).toBe(outside('inherited path', '/', 'write'));
  });

  it('refuses a .. escape, relative or absolute, as a path outside', async () => {
    const parent = await root(env, { cwd: '/work/a' });
    const up = await refusedUnchanged(parent.pid, { working_directory: '../b' });
    expect([up.code, up.reason]).toEqual(['permission_denied', 'path']);
    expect(up.message).toBe(outside('working_directory', '/work/b (given as ../b)', 'write'));
    const far = await refusedUnchanged(parent.pid, { inherited_paths: ['../../../../../etc/passwd'] });
    expect(far.message).toBe(
      outside('inherited path', '/etc/passwd (given as ../../../../../etc/passwd)', 'read'),
    );
    const abs = await refusedUnchanged(parent.pid, { working_directory: '/work/a/../b' });
    expect(abs.message).toBe(outside('working_directory', '/work/b (given as /work/a/../b)', 'write'));
    const sneaky = await refusedUnchanged(parent.pid, { inherited_paths: ['sub/../../a-other/x'] });
    expect(sneaky.reason).toBe('path');
  });

  it('does not take a sibling sharing the prefix for inside (/work/ab is not in /work/a)', async () => {
    const parent = await root(env, { cwd: '/work/a' });
    const sibling = await refusedUnchanged(parent.pid, { working_directory: '/work/ab' });
    expect(sibling.message).toBe(outside('working_directory', '/work/ab', 'write'));
    const below = await refusedUnchanged(parent.pid, { inherited_paths: ['/work/ab/x'] });
    expect(below.reason).toBe('path');
    const relative = await refusedUnchanged(parent.pid, { inherited_paths: ['../ab'] });
    expect(relative.reason).toBe('path');
  });

  it('allows paths inside the parent cwd, relative or absolute, recorded normalised', async () => {
    const parent = await root(env, { cwd: '/work/a' });
    const view = await spawnView(parent.pid, {
      working_directory: '/work/a/sub/../job/',
      inherited_paths: [
        'in.txt',
        { path: '/work/a/data//set/', kind: 'dir', access: 'read' },
        { path: './out/./x/..', kind: 'dir', access: 'write' },
        { path: '/work/a', kind: 'dir', access: 'read' },
      ],
    });
    expect(view.cwd).toBe('/work/a/job');
    expect(view.inherited_paths).toEqual([
      { path: '/work/a/in.txt', kind: 'file', access: 'read' },
      { path: '/work/a/data/set', kind: 'dir', access: 'read' },
      { path: '/work/a/out', kind: 'dir', access: 'write' },
      { path: '/work/a', kind: 'dir', access: 'read' },
    ]);
    expect((await spawnView(parent.pid, { working_directory: '.' })).cwd).toBe('/work/a');
    expect((await spawnView(parent.pid, { working_directory: 'x/..' })).cwd).toBe('/work/a');
    // a parent whose cwd is / holds the whole tree below it
    const top = await root(env, { cwd: '/' });
    expect((await spawnView(top.pid, { working_directory: '/etc' })).cwd).toBe('/etc');
  });

  it('refuses a NUL byte as invalid_argument / path, changing nothing', async () => {
    const parent = await root(env, { cwd: '/work/a' });
    const cwd = await refusedUnchanged(parent.pid, { working_directory: 'x\0y' });
    expect([cwd.code, cwd.reason]).toEqual(['invalid_argument', 'path']);
    expect(cwd.message).toBe('working_directory contains a NUL byte');
    const inherited = await refusedUnchanged(parent.pid, { inherited_paths: ['/work/a/x\0'] });
    expect([inherited.code, inherited.reason]).toEqual(['invalid_argument', 'path']);
  });

  it('confines forks the same way', async () => {
    const parent = await root(env, { cwd: '/work/a' });
    const worker = await refusedUnchanged(parent.pid, { working_directory: '/etc' }, 'fork');
    expect([worker.code, worker.reason]).toEqual(['permission_denied', 'path']);
    const restricted = await refusedUnchanged(
      parent.pid,
      { mode: 'restricted', inherited_paths: ['../b/x'] },
      'fork',
    );
    expect(restricted.message).toBe(outside('inherited path', '/work/b/x (given as ../b/x)', 'read'));
    const ok = await k().tools.fork_child_process(
      { pid: parent.pid },
      { goal: 'g', working_directory: 'sub' },
    );
    expect(ok.cwd).toBe('/work/a/sub');
  });
});

describe('paths outside the parent cwd under a path: grant', () => {
  it('allows what a live path: grant covers with the right the access needs', async () => {
    const parent = await root(env, {
      cwd: '/work/a',
      capabilities: [SPAWN, { resource: 'path:/srv/data', rights: ['read'] }],
    });
    const view = await spawnView(parent.pid, {
      inherited_paths: [
        '/srv/data/x',
        { path: '/srv/data', kind: 'dir', access: 'read' },
        '../../srv/data/y',
      ],
    });
    expect(view.inherited_paths.map((p) => p.path)).toEqual(['/srv/data/x', '/srv/data', '/srv/data/y']);
    const write = await refusedUnchanged(parent.pid, {
      inherited_paths: [{ path: '/srv/data/x', kind: 'file', access: 'write' }],
    });
    expect([write.code, write.reason]).toEqual(['permission_denied', 'path']);
    expect(write.message).toBe(outside('inherited path', '/srv/data/x', 'write'));
    // a working_directory outside the cwd is mounted read-write: read is not enough
    const cwd = await refusedUnchanged(parent.pid, { working_directory: '/srv/data/job' });
    expect(cwd.message).toBe(outside('working_directory', '/srv/data/job', 'write'));
  });

  it('covers the granted directory and below, not a sibling sharing its prefix', async () => {
    const parent = await root(env, {
      cwd: '/work/a',
      capabilities: [SPAWN, { resource: 'path:/srv/data', rights: ['read'] }],
    });
    const database = await refusedUnchanged(parent.pid, { inherited_paths: ['/srv/database'] });
    expect(database.message).toBe(outside('inherited path', '/srv/database', 'read'));
    const below = await refusedUnchanged(parent.pid, { inherited_paths: ['/srv/database/x'] });
    expect(below.reason).toBe('path');
    const parentDir = await refusedUnchanged(parent.pid, { inherited_paths: ['/srv'] });
    expect(parentDir.reason).toBe('path');
    const climb = await refusedUnchanged(parent.pid, { inherited_paths: ['/srv/data/../../etc'] });
    expect(climb.message).toBe(outside('inherited path', '/etc (given as /srv/data/../../etc)', 'read'));
  });

  it('lets write cover a working_directory, accepts the trailing-* form and a right *', async () => {
    const parent = await root(env, {
      cwd: '/work/a',
      capabilities: [
        SPAWN,
        { resource: 'path:/srv/out/', rights: ['write'] },
        { resource: 'path:/opt/*', rights: ['read'] },
        { resource: 'path:/scratch', rights: ['*'] },
      ],
    });
    const view = await spawnView(parent.pid, {
      working_directory: '/srv/out/job',
      inherited_paths: [
        { path: '/srv/out', kind: 'dir', access: 'write' },
        '/opt/tool/bin',
        { path: '/scratch/tmp', kind: 'dir', access: 'write' },
      ],
    });
    expect(view.cwd).toBe('/srv/out/job');
    expect(view.inherited_paths.map((p) => p.path)).toEqual(['/srv/out', '/opt/tool/bin', '/scratch/tmp']);
    expect((await spawnView(parent.pid, { working_directory: '/scratch/w' })).cwd).toBe('/scratch/w');
    // write does not imply read; the * form covers what starts with its prefix only
    const read = await refusedUnchanged(parent.pid, { inherited_paths: ['/srv/out/x'] });
    expect(read.message).toBe(outside('inherited path', '/srv/out/x', 'read'));
    const optWrite = await refusedUnchanged(parent.pid, { working_directory: '/opt/tool' });
    expect(optWrite.reason).toBe('path');
    const optx = await refusedUnchanged(parent.pid, { inherited_paths: ['/optx'] });
    expect(optx.reason).toBe('path');
  });

  it('stops counting a grant once it expires', async () => {
    const expires = Date.now() + 1500;
    const parent = await root(env, {
      cwd: '/work/a',
      capabilities: [
        SPAWN,
        { resource: 'path:/srv/data', rights: ['read'], expires_at: new Date(expires).toISOString() },
      ],
    });
    const view = await spawnView(parent.pid, { inherited_paths: ['/srv/data/x'] });
    expect(view.inherited_paths[0]?.path).toBe('/srv/data/x');
    await new Promise((resolve) => setTimeout(resolve, expires - Date.now() + 100));
    const expired = await refusedUnchanged(parent.pid, { inherited_paths: ['/srv/data/x'] });
    expect([expired.code, expired.reason]).toEqual(['permission_denied', 'path']);
    expect(expired.message).toBe(outside('inherited path', '/srv/data/x', 'read'));
  });

  it('counts only the parent’s own grants; path: grants delegate by directory too', async () => {
    const parent = await root(env, {
      cwd: '/work/a',
      capabilities: [SPAWN, { resource: 'path:/srv/data', rights: ['read'], delegable: true }],
    });
    const child = await runningChild(env, parent.pid, {
      inherit_capabilities: [SPAWN, { resource: 'path:/srv/data/x', rights: ['read'] }],
    });
    const grandchild = await spawnView(child.pid, { inherited_paths: ['/srv/data/x/file'] });
    expect(grandchild.inherited_paths[0]?.path).toBe('/srv/data/x/file');
    const notHis = await refusedUnchanged(child.pid, { inherited_paths: ['/srv/data/y'] });
    expect(notHis.message).toBe(outside('inherited path', '/srv/data/y', 'read'));
    for (const resource of ['path:/srv/database', 'path:/srv/data/../../etc']) {
      const denied = await refusal(
        k().tools.spawn_child_process(
          { pid: parent.pid },
          { goal: 'g', inherit_capabilities: [{ resource, rights: ['read'] }] },
        ),
      );
      expect([denied.code, denied.reason]).toEqual(['permission_denied', 'not_held']);
    }
  });
});

describe('image cwd', () => {
  it('refuses a relative cwd or one with . / .. segments or NUL at put, naming cwd, storing nothing', async () => {
    await k().admin.putImage('cwd-kept', { ...IMAGE, cwd: '/srv/kept' });
    for (const cwd of ['relative', '../../', './x', '/srv/../etc', '/srv/./x', '/srv/x/..', '/srv/\0x', '']) {
      for (const name of ['cwd-new', 'cwd-kept']) {
        const bad = await refusal(k().admin.putImage(name, { ...IMAGE, cwd }));
        expect(bad.code).toBe('invalid_argument');
        expect(HTTP_STATUS_BY_CODE[bad.code]).toBe(400);
        expect(bad.message).toMatch(/^image: cwd: /);
        expect(bad.toEnvelope().error.details).toMatchObject({ issues: [{ path: 'cwd' }] });
      }
    }
    expect((await refusal(k().admin.getImage('cwd-new'))).code).toBe('not_found');
    expect((await k().admin.getImage('cwd-kept')).spec.cwd).toBe('/srv/kept');
  });

  it('stores a good cwd normalised, and a root of the image starts there', async () => {
    const view = await k().admin.putImage('cwd-norm', { ...IMAGE, cwd: '//srv//data/' });
    expect(view.spec.cwd).toBe('/srv/data');
    expect((await k().admin.getImage('cwd-norm')).spec.cwd).toBe('/srv/data');
    expect((await k().admin.putImage('cwd-root', { ...IMAGE, cwd: '/' })).spec.cwd).toBe('/');
    const r = await root(env, { image: 'cwd-norm' });
    expect((await k().admin.getProcess(r.pid)).cwd).toBe('/srv/data');
  });

  it('refuses an image stored before the rule (a relative cwd) instead of using it', async () => {
    const spec = { ...IMAGE, cwd: '../../', pool: 'default', required_capabilities: [] };
    await env.redis.hset(
      k().keys.images,
      'cwd-legacy',
      JSON.stringify({ spec, updated_at: new Date().toISOString() }),
    );
    const stale = await refusal(k().admin.getImage('cwd-legacy'));
    expect(stale.code).toBe('failed_precondition');
    expect(stale.message).toMatch(/^stored image cwd-legacy no longer validates; put it again: spec\.cwd: /);
    const launch = await refusal(k().admin.createRoot({ goal: 'g', image: 'cwd-legacy' }));
    expect(launch.code).toBe('failed_precondition');
    await env.redis.hdel(k().keys.images, 'cwd-legacy');
  });
});

describe('root cwd (operator input)', () => {
  it('keeps refusing a relative cwd or one climbing above /, and normalises the rest', async () => {
    for (const cwd of ['relative', '/..', '/a/../../b', 'a\0']) {
      const bad = await refusal(k().admin.createRoot({ goal: 'g', cwd }));
      expect([bad.code, bad.reason]).toEqual(['invalid_argument', 'path']);
    }
    const r = await root(env, { cwd: '/srv//a/./b/../c/' });
    expect((await k().admin.getProcess(r.pid)).cwd).toBe('/srv/a/c');
  });
});
