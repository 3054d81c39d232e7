import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BudgetView, ClaimedLaunch } from '@libos/protocol';
import { redisSettingsFromEnv } from '@libos/redis';
import { hostedContext } from '@libos/sdk';
import { hostedChildEntry } from '@libos/sdk/handoff';
import { describe, expect, it } from 'vitest';
import { hostedHandoff } from '../src/child-env.js';
import { childEnvironment, inheritedEnvironment, loadWorkerConfig, planLaunch } from '../src/index.js';
import { resultParent } from '../src/isolation.js';

describe('loadWorkerConfig', () => {
  it('applies the defaults and needs only LIBOS_URL', () => {
    expect(loadWorkerConfig({ LIBOS_URL: 'http://coordinator:7070' })).toEqual({
      redis: redisSettingsFromEnv({}),
      url: 'http://coordinator:7070',
      pools: ['default'],
      concurrency: 4,
      launchShards: 1,
      workerId: `${hostname()}:${process.pid}`,
      leaseMs: 10_000,
      shutdownGraceMs: 30_000,
      logLevel: 'info',
      isolation: {
        sandbox: {
          mode: 'auto',
          uids: { first: 20_000, last: 29_999 },
          lockDir: '/run/libos/child-uids',
          runtime: [],
          hide: ['/run/libos/child-uids'],
          cgroupName: 'libos',
          cgroupRoot: undefined,
          bwrap: 'bwrap',
          prlimit: '/usr/bin/prlimit',
        },
        maxResultBytes: 16 * 1024 * 1024,
        resultDir: undefined,
      },
      childLog: { maxBytes: 1_048_576, lineBytes: 16_384 },
      hostedCalls: 1000,
      terminateBatch: 50,
    });
    expect(loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_HOSTED_CALLS: '5' }).hostedCalls).toBe(5);
    expect(loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_TERMINATE_BATCH: '200' }).terminateBatch).toBe(
      200,
    );
    expect(() => loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_TERMINATE_BATCH: '0' })).toThrow(
      'LIBOS_TERMINATE_BATCH',
    );
    expect(() => loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_HOSTED_CALLS: '0' })).toThrow(
      'LIBOS_HOSTED_CALLS',
    );
  });

  it('reads the child log bounds, and refuses a bound too small to hold a line', () => {
    const config = loadWorkerConfig({
      LIBOS_URL: 'http://c:1',
      LIBOS_CHILD_LOG_BYTES: '4096',
      LIBOS_CHILD_LOG_LINE_BYTES: '200',
    });
    expect(config.childLog).toEqual({ maxBytes: 4096, lineBytes: 200 });
    expect(() => loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_CHILD_LOG_BYTES: '10' })).toThrow(
      /LIBOS_CHILD_LOG_BYTES/,
    );
  });

  it('reads the isolation settings, and refuses a bad uid range', () => {
    const config = loadWorkerConfig({
      LIBOS_URL: 'http://c:1',
      LIBOS_ISOLATION: 'strict',
      LIBOS_CHILD_UIDS: '30000-30099',
      LIBOS_SANDBOX_RUNTIME: '/opt/agents:/srv/tools',
      LIBOS_SANDBOX_HIDE: '/srv/state',
      LIBOS_MAX_RESULT_BYTES: '4096',
    });
    expect(config.isolation).toMatchObject({
      sandbox: {
        mode: 'strict',
        uids: { first: 30_000, last: 30_099 },
        runtime: ['/opt/agents', '/srv/tools'],
        hide: ['/srv/state', '/run/libos/child-uids'],
      },
      maxResultBytes: 4096,
    });
    expect(() => loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_CHILD_UIDS: '0-10' })).toThrow(
      /LIBOS_CHILD_UIDS: a uid range is FIRST-LAST with 1000 <= FIRST <= LAST/,
    );
    expect(() => loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_ISOLATION: 'maybe' })).toThrow(
      /LIBOS_ISOLATION/,
    );
  });

  it('puts result directories in LIBOS_RESULT_DIR, else in /dev/shm when it has room, else in TMPDIR', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'result-dir-'));
    try {
      const given = loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_RESULT_DIR: dir }).isolation;
      expect(resultParent(given, 8)).toBe(dir);
      const file = join(dir, 'file');
      await writeFile(file, '');
      const notDir = loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_RESULT_DIR: file }).isolation;
      expect(() => resultParent(notDir, 8)).toThrow(`LIBOS_RESULT_DIR: ${file} is not a directory`);
      expect(() => loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_RESULT_DIR: 'results' })).toThrow(
        /LIBOS_RESULT_DIR must be an absolute path/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    // Unset: this host's /dev/shm (a tmpfs) holds 8 results of 16 MiB, not 8 of 1 TiB.
    const unset = loadWorkerConfig({ LIBOS_URL: 'http://c:1' }).isolation;
    expect(resultParent(unset, 8)).toBe('/dev/shm');
    expect(resultParent({ ...unset, maxResultBytes: 2 ** 40 }, 8)).toBeUndefined();
  });

  it('reads every variable, and names each bad one', () => {
    const config = loadWorkerConfig({
      LIBOS_URL: 'http://c:1',
      LIBOS_REDIS_URL: 'redis://r:6380',
      LIBOS_POOLS: ' gpu, default,gpu ,',
      LIBOS_CONCURRENCY: '8',
      LIBOS_WORKER_ID: 'w-1',
      LIBOS_LEASE_MS: '3000',
      LIBOS_SHUTDOWN_GRACE_MS: '0',
      LIBOS_LOG_LEVEL: 'debug',
    });
    expect(config).toMatchObject({
      pools: ['gpu', 'default'],
      concurrency: 8,
      workerId: 'w-1',
      leaseMs: 3000,
    });
    expect(config.shutdownGraceMs).toBe(0);
    expect(() => loadWorkerConfig({})).toThrow(/LIBOS_URL/);
    expect(() =>
      loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_CONCURRENCY: '0', LIBOS_POOLS: 'a b' }),
    ).toThrow(/LIBOS_POOLS.*LIBOS_CONCURRENCY|LIBOS_CONCURRENCY.*LIBOS_POOLS/);
    expect(() => loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_LEASE_MS: '10' })).toThrow(
      /LIBOS_LEASE_MS/,
    );
  });

  it('gives children LIBOS_PUBLIC_URL (the load balancer) over LIBOS_URL', () => {
    const both = { LIBOS_URL: 'http://c-1:7070', LIBOS_PUBLIC_URL: 'http://libos.internal:7070' };
    expect(loadWorkerConfig(both).url).toBe('http://libos.internal:7070');
    expect(loadWorkerConfig({ LIBOS_PUBLIC_URL: 'http://lb:1' }).url).toBe('http://lb:1');
    expect(() => loadWorkerConfig({ LIBOS_PUBLIC_URL: 'not a url' })).toThrow(
      /LIBOS_PUBLIC_URL must be a URL/,
    );
  });
});

describe('loadWorkerConfig: Redis', () => {
  it('reads the Redis address and the password file through @libos/redis', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'libos-worker-config-'));
    try {
      await writeFile(join(dir, 'redis-password'), 'from-file\n', { mode: 0o600 });
      const config = loadWorkerConfig({
        LIBOS_URL: 'http://c:1',
        LIBOS_REDIS_URL: '/run/redis/redis.sock',
        LIBOS_REDIS_PASSWORD_FILE: join(dir, 'redis-password'),
      });
      expect(config.redis).toMatchObject({
        topology: 'standalone',
        endpoint: { kind: 'socket', path: '/run/redis/redis.sock' },
      });
      expect(config.redis.password?.reveal()).toBe('from-file');
      expect(JSON.stringify(config)).not.toContain('from-file');
      expect(() => loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_REDIS_URL: 'localhost:6379' })).toThrow(
        /LIBOS_REDIS_URL/,
      );
      expect(() =>
        loadWorkerConfig({ LIBOS_URL: 'http://c:1', LIBOS_REDIS_PASSWORD_FILE: join(dir, 'missing') }),
      ).toThrow(/LIBOS_REDIS_PASSWORD_FILE: cannot read/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('childEnvironment', () => {
  it('drops the worker’s LIBOS_* variables, overlays the image env, and puts the identity last', () => {
    const env = childEnvironment(
      inheritedEnvironment({
        PATH: '/bin',
        HOME: '/root',
        LIBOS_ADMIN_TOKEN: 'secret',
        LIBOS_REDIS_URL: 'redis://x',
        UNSET: undefined,
      }),
      { HOME: '/srv', LIBOS_PID: 'pforged', LIBOS_TOKEN: 'forged', LIBOS_TRACE: '1' },
      { url: 'http://c:1', pid: 'pabc', token: 'pabc.secret' },
    );
    expect(env).toEqual({
      PATH: '/bin',
      HOME: '/srv',
      LIBOS_TRACE: '1',
      LIBOS_URL: 'http://c:1',
      LIBOS_PID: 'pabc',
      LIBOS_TOKEN: 'pabc.secret',
    });
  });
});

const dimension = (limit: number | null, used = 0) => ({
  limit,
  reserved: 0,
  used,
  remaining: limit === null ? null : limit - used,
});

function claimed(
  budget: Partial<BudgetView>,
  spec: Partial<ClaimedLaunch['image_spec']> = {},
): ClaimedLaunch {
  return {
    pid: 'pabc.1',
    parent_pid: 'pabc',
    root_pid: 'pabc',
    attempt: 2,
    attempt_id: 'pabc.1:2',
    fence: 'f',
    goal: 'g',
    schema: null,
    input: { x: 1 },
    image: 'echo',
    image_spec: {
      command: 'sh',
      args: ['{result_file}'],
      pool: 'default',
      required_capabilities: [],
      skills: [],
      ...spec,
    },
    cwd: '/work',
    inherited_paths: [],
    capabilities: [],
    resource_budget: {
      tokens: dimension(null),
      cost_usd: dimension(null),
      steps: dimension(null),
      wall_ms: dimension(null),
      children: dimension(null),
      object_bytes: dimension(null),
      ...budget,
    },
    lease_expires_at: new Date().toISOString(),
  };
}

describe('planLaunch', () => {
  it('sends the launch’s schema, and keeps goal/pid/parent_pid over spawn fields of those names', () => {
    const plan = planLaunch({
      ...claimed({}),
      input: { goal: 'spoofed', query: 'q' },
      schema: { type: 'object' },
    });
    expect(plan.kind === 'launch' && plan.launch.schema).toEqual({ type: 'object' });
    expect(plan.kind === 'launch' && plan.launch.input).toEqual({
      query: 'q',
      goal: 'g',
      pid: 'pabc.1',
      parent_pid: 'pabc',
      input: { goal: 'spoofed', query: 'q' },
    });
  });

  it('builds the request from the claim, with the image defaults', () => {
    expect(planLaunch(claimed({}))).toEqual({
      kind: 'launch',
      launch: {
        command: 'sh',
        args: ['{result_file}'],
        cwd: '/work',
        id: 'pabc.1:2',
        kind: 'echo',
        input: { x: 1, goal: 'g', pid: 'pabc.1', parent_pid: 'pabc', input: { x: 1 } },
        deadlineMs: 600_000,
        cancelGraceMs: 5_000,
      },
    });
  });

  it('takes max_steps from the remaining steps and caps the deadline by the remaining wall time', () => {
    const plan = planLaunch(
      claimed(
        { steps: dimension(10, 4), wall_ms: dimension(90_000, 30_000) },
        { kind: 'k', deadline_ms: 120_000, cancel_grace_ms: 50 },
      ),
    );
    expect(plan).toMatchObject({
      kind: 'launch',
      launch: { kind: 'k', maxSteps: 6, deadlineMs: 60_000, cancelGraceMs: 50 },
    });
    const imageFirst = planLaunch(claimed({ wall_ms: dimension(90_000) }, { deadline_ms: 1_000 }));
    expect(imageFirst).toMatchObject({ launch: { deadlineMs: 1_000 } });
  });

  it('launches nothing when the budget has no steps or no wall time left', () => {
    expect(planLaunch(claimed({ steps: dimension(3, 3) }))).toMatchObject({
      kind: 'exhausted',
      completion: { terminal: { type: 'max_steps' }, usage: { steps: 0, wall_ms: 0 } },
    });
    expect(planLaunch(claimed({ wall_ms: dimension(100, 100) }))).toMatchObject({
      kind: 'exhausted',
      completion: { terminal: { type: 'timed_out' } },
    });
  });
});

describe('hostedHandoff (the WORKFLOW_HOST a child gets)', () => {
  const dim = (remaining: number | null) => ({ limit: remaining, used: 0, reserved: 0, remaining });
  const claimed = (children: number | null) => ({
    pid: 'pabc.2',
    attempt_id: 'pabc.2:3',
    resource_budget: { children: dim(children) } as unknown as BudgetView,
  });

  it('is a version 2 handoff the SDK reads: the bridge, ids unique to the attempt, the block, the deadline', () => {
    const text = hostedHandoff(claimed(7), 90_000, 1000);
    expect(JSON.parse(text)).toEqual({
      v: 2,
      transport: 'result_file',
      exe: process.execPath,
      child_args: [hostedChildEntry(), '--result-file', '{result_file}'],
      child_id: 'pabc.2:3-sr-{n}',
      ids: [1, 7],
      deadline_ms: 90_000,
      libos: { pid: 'pabc.2', attempt_id: 'pabc.2:3' },
    });
    const ctx = hostedContext({ WORKFLOW_HOST: text });
    expect(ctx?.childCapacity()).toBe(7);
    expect(ctx?.deadlineMs()).toBe(90_000);
    expect(ctx?.extension('libos')).toEqual({ pid: 'pabc.2', attempt_id: 'pabc.2:3' });
  });

  it('the block: the remaining children budget, at most LIBOS_HOSTED_CALLS (that when unlimited), at least 1', () => {
    const ids = (children: number | null) => JSON.parse(hostedHandoff(claimed(children), 1, 50)).ids;
    expect(ids(null)).toEqual([1, 50]);
    expect(ids(500)).toEqual([1, 50]);
    expect(ids(3)).toEqual([1, 3]);
    expect(ids(0)).toEqual([1, 1]);
  });

  it('goes below the image env (which may blank it to opt out) and the identity', () => {
    const identity = { url: 'http://c:1', pid: 'pabc', token: 't' };
    expect(childEnvironment({}, undefined, identity, 'H').WORKFLOW_HOST).toBe('H');
    expect(childEnvironment({}, { WORKFLOW_HOST: '' }, identity, 'H').WORKFLOW_HOST).toBe('');
    expect(hostedContext(childEnvironment({}, { WORKFLOW_HOST: '' }, identity, 'H'))).toBeUndefined();
  });
});
