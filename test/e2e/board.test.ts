import { shChildLaunch } from '@libos/examples';
import { launchJobId, launchQueueName } from '@libos/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ADMIN_TOKEN, bearer, Cluster, rawRequest } from '../src/index.js';

let cluster: Cluster;

/** The part of Bull Board's `GET /api/queues` answer these tests read. */
const boardSchema = z.object({
  queues: z.array(
    z.object({
      name: z.string(),
      counts: z.record(z.string(), z.number()),
      jobs: z.array(
        z.object({
          id: z.string(),
          data: z.unknown(),
          returnValue: z.unknown().optional(),
          finishedOn: z.number().nullable().optional(),
        }),
      ),
    }),
  ),
});

async function board(queue: string, status: 'latest' | 'waiting' | 'completed' = 'latest') {
  const answer = await rawRequest(
    cluster.url,
    'GET',
    `/admin/queues/api/queues?activeQueue=${encodeURIComponent(queue)}&status=${status}&jobsPerPage=100`,
    { auth: bearer(ADMIN_TOKEN) },
  );
  expect(answer.status).toBe(200);
  const found = boardSchema.parse(answer.body).queues.find((q) => q.name === queue);
  if (!found) throw new Error(`the board does not list ${queue}`);
  return found;
}

beforeAll(async () => {
  cluster = await Cluster.start({ workers: 1 });
  await cluster.admin.putImage('echo', shChildLaunch('echo'));
  // No worker takes this pool: its launches stay queued.
  await cluster.admin.putImage('unserved', { ...shChildLaunch('echo'), pool: 'unserved' });
});
afterAll(async () => {
  expect(await cluster?.stop()).toEqual([]);
});

describe('Bull Board at /admin/queues', () => {
  it('lists the launches, run and queued, to the admin', async () => {
    const parent = await cluster.root('launch for the board');
    const ran = await Promise.all(
      [1, 2, 3].map((n) => parent.client.spawn({ goal: `echo ${n}`, image: 'echo', input: { n } })),
    );
    for (const child of ran)
      expect((await parent.client.wait({ child_pid: child.pid })).status).toBe('exited');
    const queued = await parent.client.spawn({ goal: 'never served', image: 'unserved' });

    const served = await board(launchQueueName('default'), 'completed');
    for (const child of ran) {
      const job = served.jobs.find((j) => j.id === launchJobId(child.pid, 1));
      // The job names the attempt and nothing a queue reader could act with.
      expect(job?.data).toEqual({ pid: child.pid, attempt: 1 });
      expect(job?.returnValue).toMatchObject({ pid: child.pid, claimed: true, status: 'exited' });
    }
    expect(served.counts.completed).toBe(3);

    const waiting = await board(launchQueueName('unserved'), 'waiting');
    expect(waiting.jobs.map((j) => [j.id, j.data])).toEqual([
      [launchJobId(queued.pid, 1), { pid: queued.pid, attempt: 1 }],
    ]);
    expect(waiting.counts.waiting).toBe(1);

    // A cancel of a queued child withdraws its job from the queue.
    await parent.client.signal({ child_pid: queued.pid, signal: 'cancel' });
    expect((await board(launchQueueName('unserved'), 'waiting')).jobs).toEqual([]);
  });

  it('serves its page to a browser with the admin token as the Basic password, and to no one else', async () => {
    const basic = (password: string) => `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
    const page = await rawRequest(cluster.url, 'GET', '/admin/queues', { auth: basic(ADMIN_TOKEN) });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(String(page.body)).toMatch(/<html/i);

    const anonymous = await rawRequest(cluster.url, 'GET', '/admin/queues');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic /);
    expect((await rawRequest(cluster.url, 'GET', '/admin/queues', { auth: basic('guess') })).status).toBe(
      403,
    );
    const api = await rawRequest(cluster.url, 'GET', '/admin/queues/api/queues', { auth: basic('guess') });
    expect(api.status).toBe(403);
  });
});
