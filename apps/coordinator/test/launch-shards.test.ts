import { launchJobId, launchQueueNames, shardOf } from '@libos/protocol';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { ADMIN_TOKEN, type Harness, raw, startHarness } from './helpers.js';

// LIBOS_LAUNCH_SHARDS=3: a pool's launches go to its trees' shards; the console's job link is a
// redirect to the right one; the board shows every shard and /metrics sums them per pool.
const SHARDS = 3;
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ LIBOS_LAUNCH_SHARDS: String(SHARDS) });
  await h.admin.putImage('echo', { command: 'sh', args: ['-c', 'exit 0', 'sh', '{result_file}'] });
});
afterAll(async () => {
  await h.stop();
});

test('launches go to their tree’s shard; the job link redirects there; board and metrics see every shard', async () => {
  const children: { pid: string; shard: number }[] = [];
  for (let i = 0; i < 6; i++) {
    const root = await h.admin.createProcess({ goal: `tree ${i}`, resource_budget: { children: 1 } });
    const child = await h.as(root.token!).spawn({ goal: 'queued', image: 'echo' });
    children.push({ pid: child.pid, shard: shardOf(root.pid, SHARDS) });
  }
  const names = launchQueueNames('default', SHARDS);
  const basic = `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`;
  for (const { pid, shard } of children) {
    const queue = `{launch-default@${shard}}`;
    for (const name of names) {
      const job = await h.coordinator.launcher
        .queuesOf('default')
        [names.indexOf(name)]?.getJob(launchJobId(pid, 1));
      expect(job?.data, `${pid} in ${name}`).toEqual(name === queue ? { pid, attempt: 1 } : undefined);
    }
    const link = await raw(h.coordinator.url, `/admin/launch-jobs/default/${pid}/1`, {
      headers: { authorization: basic },
      redirect: 'manual',
    });
    expect(link.status).toBe(302);
    expect(link.headers.get('location')).toBe(
      `/admin/queues/queue/${encodeURIComponent(queue)}/${encodeURIComponent(launchJobId(pid, 1))}`,
    );
  }
  const anonymous = await raw(h.coordinator.url, `/admin/launch-jobs/default/${children[0]?.pid}/1`, {
    redirect: 'manual',
  });
  expect(anonymous.status).toBe(401);

  const api = await raw(h.coordinator.url, '/admin/queues/api/queues', { token: ADMIN_TOKEN });
  const shown = (api.body as { queues: { name: string }[] }).queues.map((q) => q.name);
  expect(shown).toEqual(expect.arrayContaining(names));

  const metrics = await raw(h.coordinator.url, '/metrics', { token: ADMIN_TOKEN });
  expect(metrics.text).toMatch(
    new RegExp(`libos_queue_jobs\\{pool="default",state="waiting"\\} ${children.length}\\n`),
  );
});
