import { describe, expect, it } from 'vitest';
import { IMAGE, refusal, root, runningChild, USAGE, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;

const SPAWN = { resource: 'process:spawn', rights: ['use'], delegable: true };

describe('spawn_child_process', () => {
  it('creates a runnable direct child with a fresh namespace and a goal-only memory view', async () => {
    const parent = await root(env);
    const own = await k().tools.create_object({ pid: parent.pid }, { payload: { secret: 'parent memory' } });
    const child = await runningChild(env, parent.pid, { goal: 'summarise the logs', input: { n: 3 } });
    expect(child.pid).toMatch(new RegExp(`^${parent.pid}\\.\\d+$`));
    const view = await k().admin.getProcess(child.pid);
    expect(view).toMatchObject({
      parent_pid: parent.pid,
      root_pid: parent.pid,
      goal: 'summarise the logs',
      mode: 'spawn',
    });
    expect(view.input).toEqual({ n: 3 });
    expect(view.roots).toHaveLength(1);
    const goal = await k().tools.read_object({ pid: child.pid }, { oid: view.roots[0] ?? '' });
    expect(goal).toMatchObject({
      kind: 'GOAL',
      owner: child.pid,
      payload: 'summarise the logs',
      rights: ['read'],
    });
    const denied = await refusal(k().tools.read_object({ pid: child.pid }, { oid: own.oid }));
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'no_handle']);
    expect(env.launches.find((l) => l.pid === child.pid)).toMatchObject({
      attempt: 1,
      job_id: `${child.pid}-a1`,
    });
  });

  it('records the launch as runnable with attempt 1 (launch is not success)', async () => {
    const parent = await root(env);
    const spawned = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g' });
    expect(spawned).toMatchObject({ status: 'runnable', image: 'echo', cwd: '/', state_generation: 1 });
    expect((await k().admin.getProcess(spawned.pid)).attempt).toBe(1);
  });

  it('defaults image and cwd to the parent and resolves a relative working_directory against it', async () => {
    const parent = await root(env, { cwd: '/work/proj' });
    const a = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'a' });
    expect([a.image, a.cwd]).toEqual(['echo', '/work/proj']);
    const b = await k().tools.spawn_child_process(
      { pid: parent.pid },
      { goal: 'b', working_directory: 'sub/./dir' },
    );
    expect(b.cwd).toBe('/work/proj/sub/dir');
    const c = await k().tools.spawn_child_process(
      { pid: parent.pid },
      { goal: 'c', working_directory: '/work/proj/x/../y' },
    );
    expect(c.cwd).toBe('/work/proj/y');
    const bad = await refusal(
      k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'd', working_directory: '../up' }),
    );
    expect([bad.code, bad.reason]).toEqual(['permission_denied', 'path']);
  });

  it('needs read authority for a different image, not for the parent’s own', async () => {
    const parent = await root(env, { capabilities: [SPAWN] });
    const same = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g', image: 'echo' });
    expect(same.image).toBe('echo');
    const denied = await refusal(
      k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g', image: 'other' }),
    );
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'missing_capability']);
    const allowed = await root(env, { capabilities: [SPAWN, { resource: 'image:other', rights: ['read'] }] });
    const other = await k().tools.spawn_child_process({ pid: allowed.pid }, { goal: 'g', image: 'other' });
    expect(other.image).toBe('other');
    expect(env.launches.find((l) => l.pid === other.pid)?.pool).toBe('gpu');
    const unknown = await refusal(
      k().tools.spawn_child_process({ pid: allowed.pid }, { goal: 'g', image: 'nope' }),
    );
    expect([unknown.code, unknown.reason]).toEqual(['not_found', 'unknown_image']);
  });

  it('refuses a parent without process:spawn authority', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const denied = await refusal(k().tools.spawn_child_process({ pid: child.pid }, { goal: 'grandchild' }));
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'missing_capability']);
  });

  it('treats image required_capabilities as declarations that grant nothing', async () => {
    await k().admin.putImage('needs-fs', {
      ...IMAGE,
      required_capabilities: [{ resource: 'fs:/data', rights: ['read'] }],
    });
    const parent = await root(env, { image: 'needs-fs' });
    const child = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g' });
    const view = await k().admin.getProcess(child.pid);
    expect(view.required_capabilities).toEqual([{ resource: 'fs:/data', rights: ['read'] }]);
    expect(view.capabilities).toEqual([]);
  });

  it('resolves relative inherited paths against the parent cwd even when the child gets another cwd', async () => {
    const parent = await root(env, {
      cwd: '/work/p',
      capabilities: [
        SPAWN,
        { resource: 'path:/elsewhere', rights: ['write'] },
        { resource: 'path:/etc/hosts', rights: ['read'] },
      ],
    });
    const child = await k().tools.spawn_child_process(
      { pid: parent.pid },
      {
        goal: 'g',
        working_directory: '/elsewhere',
        inherited_paths: [
          'data/in.txt',
          { path: '/etc/hosts' },
          { path: 'out', kind: 'dir', access: 'write' },
        ],
      },
    );
    const view = await k().admin.getProcess(child.pid);
    expect(view.cwd).toBe('/elsewhere');
    expect(view.inherited_paths).toEqual([
      { path: '/work/p/data/in.txt', kind: 'file', access: 'read' },
      { path: '/etc/hosts', kind: 'file', access: 'read' },
      { path: '/work/p/out', kind: 'dir', access: 'write' },
    ]);
    const before = (await k().tools.list_child_processes({ pid: parent.pid }, {})).children.length;
    const bad = await refusal(
      k().tools.spawn_child_process(
        { pid: parent.pid },
        { goal: 'g', inherited_paths: ['../../etc/passwd'] },
      ),
    );
    expect([bad.code, bad.reason]).toEqual(['permission_denied', 'path']);
    expect((await k().tools.list_child_processes({ pid: parent.pid }, {})).children).toHaveLength(before);
  });

  it('copies no parent skill snapshot: a spawn starts from its image defaults', async () => {
    const parent = await root(env, { image: 'other' });
    expect((await k().admin.getProcess(parent.pid)).skill_snapshot).toEqual(['search', 'review']);
    const child = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g', image: 'echo' });
    expect((await k().admin.getProcess(child.pid)).skill_snapshot).toEqual(['search', 'edit']);
  });
});

describe('capability delegation', () => {
  const caps = [
    SPAWN,
    { resource: 'fs:/work/*', rights: ['read', 'write'], delegable: true, constraints: { max_bytes: 10 } },
    { resource: 'net:api', rights: ['call'], delegable: false },
    {
      resource: 'human:ask',
      rights: ['ask'],
      delegable: true,
      expires_at: new Date(Date.now() - 1000).toISOString(),
    },
  ];

  it('delegates a covered, live, delegable grant, attenuated to what was asked', async () => {
    const parent = await root(env, { capabilities: caps });
    const child = await k().tools.spawn_child_process(
      { pid: parent.pid },
      {
        goal: 'g',
        inherit_capabilities: [{ resource: 'fs:/work/a', rights: ['read'], constraints: { region: 'eu' } }],
      },
    );
    const view = await k().admin.getProcess(child.pid);
    expect(view.capabilities).toEqual([
      {
        resource: 'fs:/work/a',
        rights: ['read'],
        constraints: { max_bytes: 10, region: 'eu' },
        delegable: false,
        expires_at: null,
      },
    ]);
  });

  it('refuses possession without delegation authority (not_delegable)', async () => {
    const parent = await root(env, { capabilities: caps });
    const denied = await refusal(
      k().tools.spawn_child_process(
        { pid: parent.pid },
        { goal: 'g', inherit_capabilities: [{ resource: 'net:api', rights: ['call'] }] },
      ),
    );
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'not_delegable']);
    expect((await k().tools.list_child_processes({ pid: parent.pid }, {})).children).toHaveLength(0);
  });

  it('refuses an uncovered resource, wider rights, an expired grant and conflicting constraints', async () => {
    const parent = await root(env, { capabilities: caps });
    const ask = (cap: Record<string, unknown>) =>
      refusal(
        k().tools.spawn_child_process(
          { pid: parent.pid },
          { goal: 'g', inherit_capabilities: [cap as never] },
        ),
      );
    for (const cap of [
      { resource: 'fs:/etc', rights: ['read'] },
      { resource: 'fs:/work/a', rights: ['exec'] },
      { resource: 'human:ask', rights: ['ask'] },
      { resource: 'fs:/work/a', rights: ['read'], constraints: { max_bytes: 20 } },
    ]) {
      const denied = await ask(cap);
      expect([denied.code, denied.reason]).toEqual(['permission_denied', 'not_held']);
    }
  });

  it('requires a resource and nonempty rights', async () => {
    const parent = await root(env, { capabilities: caps });
    for (const cap of [
      { resource: 'fs:/work/a', rights: [] },
      { resource: '', rights: ['read'] },
      { rights: ['read'] },
    ]) {
      const bad = await refusal(
        k().tools.spawn_child_process(
          { pid: parent.pid },
          { goal: 'g', inherit_capabilities: [cap as never] },
        ),
      );
      expect(bad.code).toBe('invalid_argument');
    }
  });

  it('lets a child re-delegate only what it received as delegable', async () => {
    const parent = await root(env, { capabilities: caps });
    const child = await runningChild(env, parent.pid, {
      inherit_capabilities: [SPAWN, { resource: 'fs:/work/a', rights: ['read'] }],
    });
    const denied = await refusal(
      k().tools.spawn_child_process(
        { pid: child.pid },
        { goal: 'g', inherit_capabilities: [{ resource: 'fs:/work/a', rights: ['read'] }] },
      ),
    );
    expect([denied.code, denied.reason]).toEqual(['permission_denied', 'not_delegable']);
    const grandchild = await k().tools.spawn_child_process({ pid: child.pid }, { goal: 'g' });
    expect(grandchild.pid.startsWith(`${parent.pid}.`)).toBe(true);
  });
});

describe('budgets', () => {
  const BUDGET = { tokens: 1000, cost_usd: 1, steps: 100, wall_ms: 10_000, children: 10 };

  it('attenuates an omitted budget to half of the parent’s remaining (children: none) and reserves it', async () => {
    const parent = await root(env, { resource_budget: BUDGET });
    const child = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g' });
    expect(child.resource_budget).toEqual({
      tokens: { limit: 500, reserved: 0, used: 0, remaining: 500 },
      cost_usd: { limit: 0.5, reserved: 0, used: 0, remaining: 0.5 },
      steps: { limit: 50, reserved: 0, used: 0, remaining: 50 },
      wall_ms: { limit: 5000, reserved: 0, used: 0, remaining: 5000 },
      children: { limit: 0, reserved: 0, used: 0, remaining: 0 },
      // object_bytes is not halved: the kernel's default (64 MiB) at most a 256th of what is left
      // (the root's 1 GiB: 4 MiB)
      object_bytes: { limit: 4 * 1024 * 1024, reserved: 0, used: 0, remaining: 4 * 1024 * 1024 },
    });
    const p = (await k().admin.getProcess(parent.pid)).resource_budget;
    expect(p.tokens).toEqual({ limit: 1000, reserved: 500, used: 0, remaining: 500 });
    expect(p.children).toEqual({ limit: 10, reserved: 0, used: 1, remaining: 9 });
  });

  it('gives every child of a wide fan-out some object_bytes when it names none', async () => {
    const parent = await root(env, { resource_budget: { children: 200 } });
    const limits: number[] = [];
    for (let i = 0; i < 200; i++) {
      const child = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: `c${i}` });
      limits.push(child.resource_budget.object_bytes.limit ?? 0);
    }
    expect(Math.min(...limits)).toBeGreaterThan(1024 * 1024);
    const p = (await k().admin.getProcess(parent.pid)).resource_budget.object_bytes;
    expect(p.reserved).toBeLessThanOrEqual(p.limit ?? 0);
  });

  it('lets a fan-out of omitted-budget children use the whole children budget', async () => {
    const parent = await root(env, { resource_budget: { children: 10 } });
    for (let i = 0; i < 10; i++) await k().tools.spawn_child_process({ pid: parent.pid }, { goal: `c${i}` });
    const over = await refusal(k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'one too many' }));
    expect([over.code, over.reason]).toEqual(['resource_exhausted', 'budget']);
  });

  it('takes an omitted children budget from the image default, within what is left', async () => {
    await k().admin.putImage('spawner', { ...IMAGE, default_budget: { children: 3 } });
    const parent = await root(env, { resource_budget: { children: 10 } });
    const child = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g', image: 'spawner' });
    expect(child.resource_budget.children.limit).toBe(3);
  });

  it('caps the attenuation by the image default budget', async () => {
    await k().admin.putImage('small', { ...IMAGE, default_budget: { tokens: 100 } });
    const parent = await root(env, { resource_budget: BUDGET });
    const child = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g', image: 'small' });
    expect(child.resource_budget.tokens.limit).toBe(100);
    expect(child.resource_budget.steps.limit).toBe(50);
  });

  it('requires an explicit budget to fit and changes nothing when it does not', async () => {
    const parent = await root(env, { resource_budget: BUDGET });
    await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g', resource_budget: { tokens: 600 } });
    const over = await refusal(
      k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g', resource_budget: { tokens: 401 } }),
    );
    expect([over.code, over.reason]).toEqual(['resource_exhausted', 'budget']);
    expect(over.details).toMatchObject({ dimension: 'tokens', requested: 401, remaining: 400 });
    const fits = await k().tools.spawn_child_process(
      { pid: parent.pid },
      { goal: 'g', resource_budget: { tokens: 400 } },
    );
    expect(fits.resource_budget.tokens.limit).toBe(400);
    const p = (await k().admin.getProcess(parent.pid)).resource_budget.tokens;
    expect(p).toEqual({ limit: 1000, reserved: 1000, used: 0, remaining: 0 });
  });

  it('refuses a spawn when the children budget is spent', async () => {
    const parent = await root(env, { resource_budget: { children: 1 } });
    await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g' });
    const denied = await refusal(k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g' }));
    expect([denied.code, denied.reason]).toEqual(['resource_exhausted', 'budget']);
  });

  it('charges usage up the chain and returns the unused reservation at terminal', async () => {
    const parent = await root(env, { resource_budget: BUDGET });
    const child = await runningChild(env, parent.pid, {
      resource_budget: { tokens: 400, children: 4 },
      inherit_capabilities: [SPAWN],
    });
    const grandchild = await k().tools.spawn_child_process(
      { pid: child.pid },
      { goal: 'gc', resource_budget: { tokens: 100 } },
    );
    const { mintToken } = await import('../src/index.js');
    const claimed = await k().worker.claim(grandchild.pid, 1, {
      workerId: 'w',
      tokenHash: mintToken(grandchild.pid).tokenHash,
      leaseMs: 60_000,
    });
    await k().worker.complete(grandchild.pid, 1, claimed.fence, {
      terminal: { type: 'captured' },
      report: 'ok',
      usage: { ...USAGE, cost_usd: 0.01 },
    });
    const c = (await k().admin.getProcess(child.pid)).resource_budget;
    expect(c.tokens).toEqual({ limit: 400, reserved: 0, used: 15, remaining: 385 });
    expect(c.cost_usd.used).toBeCloseTo(0.01);
    let p = (await k().admin.getProcess(parent.pid)).resource_budget;
    expect(p.tokens).toEqual({ limit: 1000, reserved: 385, used: 15, remaining: 600 });
    expect(p.children.used).toBe(2);
    await k().worker.complete(child.pid, 1, child.fence, { terminal: { type: 'no_report' }, usage: USAGE });
    p = (await k().admin.getProcess(parent.pid)).resource_budget;
    expect(p.tokens).toEqual({ limit: 1000, reserved: 0, used: 30, remaining: 970 });
    expect(p.steps).toEqual({ limit: 100, reserved: 0, used: 4, remaining: 96 });
  });
});

describe('clearance at launch', () => {
  it('defaults to the parent clearance, may be set, and must hold the goal’s labels', async () => {
    const parent = await root(env, { clearance: ['internal', 'secret'] });
    const same = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g' });
    expect((await k().admin.getProcess(same.pid)).clearance).toEqual(['internal', 'secret']);
    const narrow = await k().tools.spawn_child_process(
      { pid: parent.pid },
      { goal: 'g', clearance: ['internal'] },
    );
    expect((await k().admin.getProcess(narrow.pid)).clearance).toEqual(['internal']);
    const secret = await k().tools.create_object({ pid: parent.pid }, { payload: 's', labels: ['secret'] });
    await k().tools.read_object({ pid: parent.pid }, { oid: secret.oid });
    const tainted = await refusal(
      k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g', clearance: ['internal'] }),
    );
    expect([tainted.code, tainted.reason]).toEqual(['permission_denied', 'data_flow']);
    const ok = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'g' });
    expect((await k().admin.getProcess(ok.pid)).labels).toEqual(['secret']);
  });
});

describe('list_child_processes and get_process', () => {
  it('lists direct children only, terminal rows included by default', async () => {
    const parent = await root(env);
    const a = await runningChild(env, parent.pid, { inherit_capabilities: [SPAWN] });
    const b = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'b' });
    const grandchild = await k().tools.spawn_child_process({ pid: a.pid }, { goal: 'gc' });
    await k().tools.signal_child_process({ pid: parent.pid }, { child_pid: b.pid, signal: 'cancel' });
    const all = await k().tools.list_child_processes({ pid: parent.pid }, {});
    expect(all.children.map((c) => c.pid)).toEqual([a.pid, b.pid]);
    expect(all.children[1]).toMatchObject({ status: 'killed', outcome: { type: 'killed' } });
    const live = await k().tools.list_child_processes({ pid: parent.pid }, { include_terminal: false });
    expect(live.children.map((c) => c.pid)).toEqual([a.pid]);
    expect(all.children.some((c) => c.pid === grandchild.pid)).toBe(false);
  });

  it('shows self or a direct child, nothing else', async () => {
    const parent = await root(env);
    const a = await runningChild(env, parent.pid, { inherit_capabilities: [SPAWN] });
    const grandchild = await k().tools.spawn_child_process({ pid: a.pid }, { goal: 'gc' });
    expect((await k().tools.get_process({ pid: parent.pid }, {})).pid).toBe(parent.pid);
    expect((await k().tools.get_process({ pid: parent.pid }, { pid: a.pid })).status).toBe('running');
    const far = await refusal(k().tools.get_process({ pid: parent.pid }, { pid: grandchild.pid }));
    expect([far.code, far.reason]).toEqual(['permission_denied', 'not_direct_child']);
    const up = await refusal(k().tools.get_process({ pid: a.pid }, { pid: parent.pid }));
    expect(up.reason).toBe('not_direct_child');
    const other = await root(env);
    const foreign = await refusal(k().tools.get_process({ pid: parent.pid }, { pid: other.pid }));
    expect(foreign.code).toBe('not_found');
  });

  it('rejects malformed arguments as invalid_argument', async () => {
    const parent = await root(env);
    for (const args of [
      {},
      { goal: '' },
      { goal: 'g', unknown: 1 },
      { goal: 'g', resource_budget: { tokens: -1 } },
    ]) {
      const bad = await refusal(k().tools.spawn_child_process({ pid: parent.pid }, args as never));
      expect(bad.code).toBe('invalid_argument');
    }
    expect((await k().tools.list_child_processes({ pid: parent.pid }, {})).children).toHaveLength(0);
  });
});
