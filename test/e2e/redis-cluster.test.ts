import { launchJobId, launchQueueKey, launchQueueName } from '@libos/protocol';
import type { Cluster as RedisCluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  asSelf,
  Cluster,
  eventually,
  NO_USAGE,
  numberFromRequest,
  READ_REQUEST,
  shImage,
  WORKER_NAME_VAR,
  writeResult,
} from '../src/index.js';

// The process semantics on a real 3-master Redis Cluster on loopback (LIBOS_REDIS_CLUSTER_NODES,
// a password file): the coordinator and workers reach it through the one factory, every tree's
// keys and wake channels live on its slot's master, and the reads that span trees (admin
// listings, the reaper's lost-launch check) go per tree. Every other e2e file can run on a
// cluster too: E2E_REDIS=cluster.

const TREES = 12;
let cluster: Cluster;
let redis: RedisCluster;

beforeAll(async () => {
  cluster = await Cluster.start({
    redisMasters: 3,
    redisPassword: 'e2e-cluster-password-0123456789',
    workers: 1,
    coordinatorEnv: { LIBOS_RELAUNCH_AFTER_MS: '1000' },
  });
  // The second worker after the first: two tsx starts at once on a loaded 2-core host take long.
  await cluster.startWorker(1);
  redis = cluster.redisClient() as RedisCluster;
  await redis.connect();
  // Keeps an object of its own (its token), completes with n² and the worker that ran it.
  await cluster.admin.putImage('square', {
    ...shImage(
      [
        READ_REQUEST,
        numberFromRequest('n'),
        asSelf('create_object', '{"payload":{"kept":%s}}', '"$n"'),
        writeResult(
          `"status":"completed","output":{"n":%s,"square":%s,"worker":"%s"},${NO_USAGE},"steps":1`,
          '"$n"',
          '"$((n * n))"',
          `"$${WORKER_NAME_VAR}"`,
        ),
      ].join('; '),
    ),
    deadline_ms: 30_000,
  });
  // Blocks on its mailbox (a wake on its tree's sharded channel), answers the parent, and
  // completes with the body it got.
  await cluster.admin.putImage('mail', {
    ...shImage(
      [
        READ_REQUEST,
        `got=$(${asSelf('receive_process_messages', '{"block":true,"limit":1}')})`,
        `body=$(printf '%s' "$got" | sed -n 's/.*"body":"\\([a-z0-9-]*\\)".*/\\1/p')`,
        asSelf('send_process_message', '{"to":"parent","body":"re-%s"}', '"$body"'),
        writeResult(`"status":"completed","output":{"body":"%s"},${NO_USAGE},"steps":1`, '"$body"'),
      ].join('; '),
    ),
    deadline_ms: 30_000,
  });
  await cluster.admin.putImage('sleeper', { ...shImage(`${READ_REQUEST}; sleep 30`), cancel_grace_ms: 300 });
  // No worker takes this pool: its job stays queued for the reaper test to lose.
  await cluster.admin.putImage('spare', {
    ...shImage(`${READ_REQUEST}; ${writeResult('"status":"completed","output":"spare"')}`),
    pool: 'spare',
  });
}, 120_000);
afterAll(async () => {
  redis?.disconnect();
  expect(await cluster?.stop()).toEqual([]);
});

/** How many trees (their `seq` hash) each master holds. */
async function treesPerMaster(): Promise<number[]> {
  return Promise.all(redis.nodes('master').map(async (node) => (await node.keys('libos:{*}:seq')).length));
}

describe('process semantics on a 3-master Redis Cluster', () => {
  it('spawns, waits and merges across trees on every master; admin listings see them all', async () => {
    const makeRoot = (i: number) =>
      cluster.root(`tree ${i}`, { goal: `tree ${i}`, resource_budget: { children: 3, steps: 30 } });
    const roots = await Promise.all(Array.from({ length: TREES }, (_, i) => makeRoot(i)));
    // The trees spread over the masters: each master holds some. A tree's slot is random, so 12
    // trees leave a master empty about 2 % of the time; a few more trees make that vanishingly rare.
    let perMaster = await treesPerMaster();
    while (perMaster.some((n) => n === 0) && roots.length < 3 * TREES) {
      roots.push(await makeRoot(roots.length));
      perMaster = await treesPerMaster();
    }
    expect(perMaster).toHaveLength(3);
    expect(perMaster.every((n) => n > 0)).toBe(true);

    const runs = await Promise.all(
      roots.map(async (root, r) => {
        const children = await Promise.all(
          [0, 1, 2].map((j) =>
            root.client.spawn({ goal: `square ${r * 3 + j}`, image: 'square', input: { n: r * 3 + j } }),
          ),
        );
        // Blocking waits: each is woken by its child's exit on its tree's shard.
        const waited = await Promise.all(children.map((child) => root.client.wait({ child_pid: child.pid })));
        return { root, children, waited };
      }),
    );
    const workers = new Set<string>();
    for (const { root, children, waited } of runs) {
      for (const [j, answer] of waited.entries()) {
        expect(answer).toMatchObject({ ready: true, status: 'exited', outcome: { type: 'completed' } });
        const result = await root.client.readObject({ oid: answer.result_oid ?? '' });
        const { n, square, worker } = result.payload as { n: number; square: number; worker: string };
        expect(square).toBe(n * n);
        workers.add(worker);
        const merged = await root.client.merge({ child_pid: children[j]?.pid ?? '' });
        expect(merged.merged_oids).toHaveLength(1);
        expect((await root.client.readObject({ oid: merged.merged_oids[0] ?? '' })).payload).toEqual({
          kept: n,
        });
      }
      const listed = await root.client.listChildren();
      expect(listed.children.every((c) => c.status === 'exited' && c.merged)).toBe(true);
    }
    expect([...workers].sort()).toEqual([cluster.workerName(0), cluster.workerName(1)]);

    // Admin listings read the rows per tree, whatever master each is on.
    const pids = new Set(runs.flatMap(({ children }) => children.map((c) => c.pid)));
    const rootPids = new Set(roots.map((r) => r.pid));
    const listedRoots = await cluster.admin.listProcesses({ roots: true, limit: 1000 });
    const listedRootPids = new Set(listedRoots.processes.map((p) => p.pid));
    expect([...rootPids].every((pid) => listedRootPids.has(pid))).toBe(true);
    const exited = await eventually(
      async () => {
        const page = await cluster.admin.listProcesses({ status: 'exited', limit: 1000 });
        const seen = new Set(page.processes.map((p) => p.pid));
        return [...pids].every((pid) => seen.has(pid)) ? page : undefined;
      },
      { what: 'every child listed as exited' },
    );
    expect(exited.processes.every((p) => p.status === 'exited')).toBe(true);
    for (const { root, children } of runs.slice(0, 3)) {
      const tree = await cluster.admin.listProcesses({ root: root.pid });
      expect(tree.processes.map((p) => p.pid).sort()).toEqual(
        [root.pid, ...children.map((c) => c.pid)].sort(),
      );
      const own = await cluster.admin.listProcesses({ parent: root.pid, image: 'square' });
      expect(own.processes).toHaveLength(3);
    }
  });

  it('forks a child with the parent’s object in its view, and waits for it', async () => {
    const parent = await cluster.root('fork on a cluster', {
      goal: 'fork',
      resource_budget: { children: 2, steps: 20 },
    });
    const made = await parent.client.createObject({ payload: { shared: true } });
    const forked = await parent.client.fork({
      goal: 'square 7',
      image: 'square',
      input: { n: 7 },
      root_oids: [made.oid],
    });
    expect(forked.roots.map((r) => r.oid)).toContain(made.oid);
    const waited = await parent.client.wait({ child_pid: forked.pid });
    expect(waited).toMatchObject({ ready: true, status: 'exited', outcome: { type: 'completed' } });
    expect((await parent.client.readObject({ oid: waited.result_oid ?? '' })).payload).toMatchObject({
      square: 49,
    });
  });

  it('delivers messages both ways: a blocked receive is woken on the tree’s shard', async () => {
    const parent = await cluster.root('mail on a cluster', {
      goal: 'mail',
      resource_budget: { children: 4, steps: 20 },
    });
    const children = await Promise.all(
      [0, 1, 2, 3].map(() => parent.client.spawn({ goal: 'answer mail', image: 'mail' })),
    );
    // Let each child block in its receive first, then send. A blocked receive shows as
    // `waiting_event`; waiting for all four `running` at once raced their receives (they block
    // within tens of ms of starting) and lost whenever the launches were quick.
    await eventually(
      async () => {
        const listed = await parent.client.listChildren();
        return listed.children.every((c) => c.status === 'waiting_event') ? true : undefined;
      },
      // four sandboxed launches through two workers: slow on a loaded CI host (15 s was not enough once)
      { what: 'the mail children to block in their receives', withinMs: 60_000 },
    );
    for (const [i, child] of children.entries()) {
      await parent.client.send({ to: child.pid, body: `hello-${i}` });
    }
    const waited = await Promise.all(children.map((child) => parent.client.wait({ child_pid: child.pid })));
    for (const [i, answer] of waited.entries()) {
      expect(answer).toMatchObject({ ready: true, status: 'exited' });
      expect((await parent.client.readObject({ oid: answer.result_oid ?? '' })).payload).toEqual({
        body: `hello-${i}`,
      });
    }
    const replies = await parent.client.receive({ limit: 10 });
    expect(replies.messages.map((m) => m.body).sort()).toEqual([
      're-hello-0',
      're-hello-1',
      're-hello-2',
      're-hello-3',
    ]);
  });

  it('pauses, resumes and terminates a running child', async () => {
    const parent = await cluster.root('signals on a cluster', {
      goal: 'signals',
      resource_budget: { children: 1, steps: 10 },
    });
    const child = await parent.client.spawn({ goal: 'sleep', image: 'sleeper' });
    const status = (want: string) =>
      eventually(
        async () => ((await cluster.admin.getProcess(child.pid)).status === want ? true : undefined),
        { what: `${child.pid} ${want}` },
      );
    await status('running');
    await parent.client.signal({ child_pid: child.pid, signal: 'pause' });
    await status('paused');
    await parent.client.signal({ child_pid: child.pid, signal: 'resume' });
    await status('running');
    const waiting = parent.client.wait({ child_pid: child.pid });
    await parent.client.signal({ child_pid: child.pid, signal: 'terminate' });
    expect(await waiting).toMatchObject({ ready: true, status: 'killed' });
  });

  it('the reaper enqueues again a launch whose job was lost', async () => {
    const parent = await cluster.root('lost launch', {
      goal: 'lost',
      resource_budget: { children: 1, steps: 10 },
    });
    const child = await parent.client.spawn({ goal: 'spare', image: 'spare' });
    const queue = launchQueueKey(launchQueueName('spare'));
    const job = `${queue}${launchJobId(child.pid, 1)}`;
    expect(await redis.exists(job)).toBe(1);
    // As if the coordinator had died between recording the launch and enqueueing it.
    await redis.del(job);
    await redis.lrem(`${queue}wait`, 0, launchJobId(child.pid, 1));
    await eventually(async () => ((await redis.exists(job)) === 1 ? true : undefined), {
      withinMs: 20_000,
      what: 'the reaper to enqueue the lost launch again',
    });
    // The same launch, under the same job id, for a worker of its pool to take.
    expect(JSON.parse((await redis.hget(job, 'data')) ?? '{}')).toEqual({ pid: child.pid, attempt: 1 });
    expect(await redis.lrange(`${queue}wait`, 0, -1)).toContain(launchJobId(child.pid, 1));
    expect((await cluster.admin.getProcess(child.pid)).status).toBe('runnable');
  });
});
