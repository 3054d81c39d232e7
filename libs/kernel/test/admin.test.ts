import { describe, expect, it } from 'vitest';
import { DEFAULT_ROOT_CAPABILITIES, mintToken } from '../src/index.js';
import { IMAGE, refusal, root, runningChild, USAGE, useKernel, wipeIndex } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;

describe('images', () => {
  it('puts, gets and lists images; args must name {result_file}', async () => {
    const view = await k().admin.putImage('lister', { ...IMAGE, kind: 'summarise', deadline_ms: 5000 });
    expect(view).toMatchObject({
      name: 'lister',
      kind: 'summarise',
      spec: { pool: 'default', deadline_ms: 5000 },
    });
    expect((await k().admin.getImage('lister')).spec.args).toEqual(IMAGE.args);
    expect((await k().admin.listImages()).map((i) => i.name)).toEqual(
      expect.arrayContaining(['echo', 'lister', 'other']),
    );
    const bad = await refusal(k().admin.putImage('bad', { command: 'node', args: ['x.js'] }));
    expect(bad.code).toBe('invalid_argument');
    expect((await refusal(k().admin.putImage('bad name!', IMAGE))).code).toBe('invalid_argument');
    expect((await refusal(k().admin.getImage('missing'))).code).toBe('not_found');
  });
});

describe('roots', () => {
  it('gives a root the default grants, an unlimited budget and full clearance unless told otherwise', async () => {
    const r = await root(env);
    const view = await k().admin.getProcess(r.pid);
    expect(view).toMatchObject({
      status: 'running',
      driver: 'caller',
      mode: 'root',
      parent_pid: null,
      clearance: ['*'],
    });
    expect(view.capabilities.map((c) => c.resource)).toEqual(
      DEFAULT_ROOT_CAPABILITIES.map((c) => c.resource),
    );
    expect(view.resource_budget.tokens.limit).toBeNull();
    const custom = await root(env, {
      capabilities: [],
      clearance: ['public'],
      resource_budget: { steps: 5 },
      cwd: '/srv/./x',
    });
    expect(await k().admin.getProcess(custom.pid)).toMatchObject({
      capabilities: [],
      clearance: ['public'],
      cwd: '/srv/x',
    });
    expect((await refusal(k().admin.createRoot({ goal: 'x', cwd: 'relative' }))).reason).toBe('path');
    expect((await refusal(k().admin.createRoot({ goal: '' }))).code).toBe('invalid_argument');
  });

  it('lets an operator signal any process, roots included', async () => {
    const r = await root(env);
    await k().admin.signal(r.pid, { signal: 'pause' });
    const paused = await refusal(k().tools.create_object({ pid: r.pid }, { payload: 1 }));
    expect(paused.reason).toBe('paused_caller');
    await k().admin.signal(r.pid, { signal: 'resume' });
    await k().tools.create_object({ pid: r.pid }, { payload: 1 });
    const killed = await k().admin.signal(r.pid, { signal: 'terminate', reason: 'operator' });
    expect(killed.status).toBe('killed');
  });
});

describe('operator wait and object reads', () => {
  it('waits on any process without recording a wait, and reads any object', async () => {
    const created = await k().admin.createRoot({ goal: 'batch', image: 'echo', launch: true });
    const observed = await k().admin.wait(created.pid, { block: false });
    expect(observed).toMatchObject({ ready: false, pid: created.pid, status: 'runnable', result_oid: null });
    const claimed = await k().worker.claim(created.pid, 1, {
      workerId: 'w',
      tokenHash: mintToken(created.pid).tokenHash,
      leaseMs: 60_000,
    });
    const waiting = k().admin.wait(created.pid, {}, { pollMs: 5000 });
    const before = (await k().admin.getProcess(created.pid)).state_generation;
    const done = await k().worker.complete(created.pid, 1, claimed.fence, {
      terminal: { type: 'captured' },
      report: { rows: [] },
      usage: USAGE,
    });
    const result = await waiting;
    expect(result).toMatchObject({ ready: true, status: 'exited', result_oid: done.result_oid });
    expect(result.state_generation).toBe(before + 1);
    expect(await k().admin.readObject(done.result_oid ?? '')).toEqual({
      oid: done.result_oid,
      payload: { rows: [] },
      owner: created.pid,
      labels: [],
      version: 1,
    });
    const missing = await refusal(k().admin.readObject(`${created.pid}/o999`));
    expect([missing.code, missing.reason]).toEqual(['not_found', 'released']);
    const short = await k().admin.wait((await root(env)).pid, {}, { pollMs: 100 });
    expect(short.ready).toBe(false);
  });
});

describe('callers', () => {
  it('checks every call against its caller', async () => {
    const r = await root(env);
    const ghost = `${r.pid}.999`;
    expect((await refusal(k().tools.create_object({ pid: ghost }, { payload: 1 }))).code).toBe('not_found');
    expect((await refusal(k().tools.create_object({ pid: 'not a pid' }, { payload: 1 }))).code).toBe(
      'invalid_argument',
    );
    const queued = await k().tools.spawn_child_process({ pid: r.pid }, { goal: 'g' });
    const early = await refusal(k().tools.send_process_message({ pid: queued.pid }, { to: 'parent' }));
    expect([early.code, early.reason]).toEqual(['failed_precondition', 'not_runnable']);
    expect((await refusal(k().callTool('no_such_tool' as never, { pid: r.pid }, {}))).code).toBe('not_found');
  });
});

describe('the status index', () => {
  it('lists processes by status with a cursor and follows transitions', async () => {
    const r = await root(env);
    const children = [];
    for (let i = 0; i < 5; i++)
      children.push(await k().tools.spawn_child_process({ pid: r.pid }, { goal: `${i}` }));
    const mine = new Set(children.map((c) => c.pid));
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await k().admin.listProcesses({
        status: 'runnable',
        limit: 2,
        ...(cursor ? { cursor } : {}),
      });
      expect(page.processes.length).toBeLessThanOrEqual(2);
      expect(page.processes.every((p) => p.status === 'runnable')).toBe(true);
      seen.push(...page.processes.map((p) => p.pid));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    expect(seen.filter((pid) => mine.has(pid)).sort()).toEqual([...mine].sort());
    const first = children[0]?.pid ?? '';
    await k().tools.signal_child_process({ pid: r.pid }, { child_pid: first, signal: 'cancel' });
    const killed = await k().admin.listProcesses({ status: 'killed', limit: 1000 });
    expect(killed.processes.map((p) => p.pid)).toContain(first);
    const runnable = await k().admin.listProcesses({ status: 'runnable', limit: 1000 });
    expect(runnable.processes.map((p) => p.pid)).not.toContain(first);
  });

  it('is derived: repairIndex rebuilds it from the rows', async () => {
    const r = await root(env);
    const child = await runningChild(env, r.pid);
    await k().worker.complete(child.pid, 1, child.fence, {
      terminal: { type: 'captured' },
      report: 1,
      usage: USAGE,
    });
    await wipeIndex(env);
    expect((await k().admin.listProcesses({ status: 'exited' })).processes).toEqual([]);
    expect(await k().admin.repairIndex()).toBeGreaterThanOrEqual(2);
    expect(
      (await k().admin.listProcesses({ status: 'exited', limit: 1000 })).processes.map((p) => p.pid),
    ).toContain(child.pid);
  });

  it('cannot be regressed by a late, older record', async () => {
    const r = await root(env);
    const child = await runningChild(env, r.pid);
    await k().flushIndex();
    const shard = k().keys.indexShardOf(child.pid);
    const gen = await env.redis.hget(k().keys.indexGen(shard), child.pid);
    expect(gen).toBe('2:running');
    // replay the spawn's record (generation 1, runnable) as a late batch would
    const { Scripts } = await import('../src/scripts.js');
    await new Scripts(env.redis).index(k().keys.indexGen(shard), k().keys.index(shard), [
      [child.pid, 1, 'runnable', 0],
    ]);
    expect(await env.redis.hget(k().keys.indexGen(shard), child.pid)).toBe('2:running');
    const runnable = await k().admin.listProcesses({ status: 'runnable', limit: 1000 });
    expect(runnable.processes.map((p) => p.pid)).not.toContain(child.pid);
  });

  it('gives the launch of a runnable process again, to re-enqueue a lost job', async () => {
    const r = await root(env);
    const spawned = await k().tools.spawn_child_process({ pid: r.pid }, { goal: 'g', image: 'other' });
    expect(await k().admin.launchOf(spawned.pid)).toEqual({
      pid: spawned.pid,
      root_pid: r.pid,
      attempt: 1,
      job_id: `${spawned.pid}-a1`,
      pool: 'gpu',
    });
    expect((await refusal(k().admin.launchOf(r.pid))).reason).toBe('not_runnable');
  });
});
