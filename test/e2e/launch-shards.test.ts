import { launchJobId, launchQueueKey, launchQueueNames, launchQueueOf, shardOf } from '@libos/protocol';
import type { Cluster as RedisCluster } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Cluster, READ_REQUEST, shImage, writeResult } from '../src/index.js';

// A pool's launches spread over LIBOS_LAUNCH_SHARDS queues `{launch-<pool>@<k>}`,
// chosen by tree with the kernel's hash, each queue its own slot of a real 3-master Redis Cluster.

const SHARDS = 3;
let cluster: Cluster;
let redis: RedisCluster;

beforeAll(async () => {
  const shards = { LIBOS_LAUNCH_SHARDS: String(SHARDS) };
  cluster = await Cluster.start({
    redisMasters: 3,
    redisPassword: 'e2e-cluster-password-0123456789',
    workers: 1,
    coordinatorEnv: shards,
    workerEnv: shards,
  });
  redis = cluster.redisClient() as RedisCluster;
  await redis.connect();
  await cluster.admin.putImage('done', {
    ...shImage(`${READ_REQUEST}; ${writeResult('"status":"completed","output":"done"')}`),
    deadline_ms: 30_000,
  });
}, 120_000);
afterAll(async () => {
  redis?.disconnect();
  expect(await cluster?.stop()).toEqual([]);
});

it('puts each tree’s launches in its shard’s queue, three queues in three slots, and runs them all', async () => {
  const tree = (i: number) =>
    cluster.root(`tree ${i}`, { goal: `tree ${i}`, resource_budget: { children: 1, steps: 10 } });
  // Root pids are random: more trees until every shard has some (9 miss one 8% of the time).
  const roots = await Promise.all(Array.from({ length: 9 }, (_, i) => tree(i)));
  while (new Set(roots.map((root) => shardOf(root.pid, SHARDS))).size < SHARDS && roots.length < 60) {
    roots.push(await tree(roots.length));
  }
  const children = await Promise.all(roots.map((root) => root.client.spawn({ goal: 'done', image: 'done' })));
  const waited = await Promise.all(
    children.map((child, i) => roots[i]?.client.wait({ child_pid: child.pid })),
  );
  for (const answer of waited) {
    expect(answer).toMatchObject({ ready: true, status: 'exited', outcome: { type: 'completed' } });
  }

  const names = launchQueueNames('default', SHARDS);
  expect(names).toEqual(['{launch-default@0}', '{launch-default@1}', '{launch-default@2}']);
  const used = new Set<string>();
  for (const [i, child] of children.entries()) {
    const queue = launchQueueOf('default', child.pid, SHARDS);
    expect(queue).toBe(`{launch-default@${shardOf(roots[i]?.pid ?? '', SHARDS)}}`);
    used.add(queue);
    // The (completed) job is in its tree's queue and in no other.
    for (const name of names) {
      const job = `${launchQueueKey(name)}${launchJobId(child.pid, 1)}`;
      expect(await redis.exists(job), `${job}`).toBe(name === queue ? 1 : 0);
    }
  }
  expect([...used].sort()).toEqual(names);
  for (const name of names) expect(await redis.zcard(`${launchQueueKey(name)}completed`)).toBeGreaterThan(0);
  // Each queue is a slot of its own (its name is the hash tag), none the old shared `{libos}`.
  const slotOf = (key: string) => redis.cluster('KEYSLOT', key) as Promise<number>;
  const slots = await Promise.all(names.map((name) => slotOf(`${launchQueueKey(name)}wait`)));
  expect(new Set(slots).size).toBe(SHARDS);
  expect(slots).not.toContain(await slotOf('{libos}:launch-default:wait'));
  for (const [k, name] of names.entries()) {
    expect(await slotOf(`${launchQueueKey(name)}${launchJobId(children[0]?.pid ?? '', 1)}`)).toBe(slots[k]);
  }
});
