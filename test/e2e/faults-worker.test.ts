import { launchJobId, launchQueueName } from '@libos/protocol';
import { LibosError } from '@libos/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ADMIN_TOKEN,
  bearer,
  Cluster,
  eventually,
  READ_REQUEST,
  rawRequest,
  type Scratch,
  scratch,
  shImage,
  WORKER_NAME_VAR,
  writeResult,
} from '../src/index.js';

const LEASE_MS = 1_500;
const REAPER_MS = 500;
let cluster: Cluster;
let files: Scratch;

/** The ids of the jobs Bull Board shows in `status` for the default pool. */
async function jobIds(status: 'failed' | 'completed'): Promise<string[]> {
  const queue = launchQueueName('default');
  const answer = await rawRequest(
    cluster.url,
    'GET',
    `/admin/queues/api/queues?activeQueue=${encodeURIComponent(queue)}&status=${status}&jobsPerPage=100`,
    { auth: bearer(ADMIN_TOKEN) },
  );
  const body = z
    .object({ queues: z.array(z.object({ name: z.string(), jobs: z.array(z.object({ id: z.string() })) })) })
    .parse(answer.body);
  return body.queues.find((q) => q.name === queue)?.jobs.map((j) => j.id) ?? [];
}

beforeAll(async () => {
  files = await scratch();
  cluster = await Cluster.start({ workers: 2, workerEnv: { LIBOS_LEASE_MS: String(LEASE_MS) } });
  // Appends "<attempt id> <worker>" per run: the proof of how often, and where, it ran. The first
  // attempt works 4 s (it is orphaned meanwhile), a resumed one 0.5 s; then each tries its token.
  await cluster.admin.putImage('once', {
    ...shImage(
      [
        READ_REQUEST,
        `echo "$id $${WORKER_NAME_VAR}" >> "$2/runs"`,
        'case "$id" in *:1) sleep 4 ;; *) sleep 0.5 ;; esac',
        `code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$LIBOS_URL/v1/tools/get_process" -H "authorization: Bearer $LIBOS_TOKEN" -H "content-type: application/json" --data '{}')`,
        'echo "$id $code" >> "$2/token-checks"',
        writeResult('"status":"completed","output":{"worker":"%s"}', `"$${WORKER_NAME_VAR}"`),
      ].join('; '),
      files.dir,
    ),
  });
});
afterAll(async () => {
  const strays = await cluster?.stop();
  await files?.remove();
  expect(strays ?? []).toEqual([]);
});

describe('a worker killed with SIGKILL mid-run', () => {
  it('takes its child with it, leaves its process paused/stale_execution, and an operator’s resume completes it elsewhere', async () => {
    const parent = await cluster.root('outlive a worker');
    const child = await parent.client.spawn({ goal: 'run once', image: 'once' });
    // The parent blocks on it the whole time; the answer must be the resumed attempt's.
    const waiting = parent.client.wait({ child_pid: child.pid });
    const [first] = await eventually(
      async () => {
        const runs = await files.lines('runs');
        return runs.length > 0 ? runs : undefined;
      },
      { withinMs: 20_000, what: 'the first run' },
    );
    const [attemptId, ranOn] = first!.split(' ');
    expect(attemptId).toBe(`${child.pid}:1`);
    const doomed = [0, 1].find((i) => cluster.workerName(i) === ranOn)!;
    const survivor = cluster.workerName(1 - doomed);

    await cluster.killWorker(doomed);
    const killedAt = performance.now();
    // Its child dies with it (its sandbox dies with its launcher, and the watchdog sees the EOF).
    expect(await cluster.straysAfter(2_000)).toEqual([]);
    // Nothing but the coordinator's reaper moves it, once the lease has expired.
    expect((await cluster.admin.getProcess(child.pid)).status).toBe('running');
    const stale = await eventually(
      async () => {
        const view = await cluster.admin.getProcess(child.pid);
        return view.status === 'paused' ? view : undefined;
      },
      { withinMs: 15_000, what: 'the stale recovery' },
    );
    const detectedIn = performance.now() - killedAt;
    expect(stale).toMatchObject({ pause_reason: 'stale_execution', resume_gate: 'host', attempt: 1 });
    expect(detectedIn).toBeLessThan(LEASE_MS + REAPER_MS + 2_000);

    // Only an operator may resume it: the parent's resume is refused at the host gate.
    const refused = await parent.client
      .signal({ child_pid: child.pid, signal: 'resume' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LibosError);
    expect(refused).toMatchObject({ code: 'failed_precondition', reason: 'host_gate' });

    // The survivor's BullMQ stall check fails the dead worker's job rather than handing it out again.
    await eventually(
      async () => ((await jobIds('failed')).includes(launchJobId(child.pid, 1)) ? true : undefined),
      {
        withinMs: 20_000,
        what: 'the stalled job to be failed',
      },
    );
    expect(await files.lines('runs')).toEqual([`${child.pid}:1 ${ranOn}`]);
    expect((await cluster.admin.getProcess(child.pid)).status).toBe('paused');

    const resumed = await cluster.admin.signalProcess(child.pid, 'resume', 'inspected: safe to run again');
    expect(resumed).toMatchObject({ status: 'runnable', attempt: 2 });
    const waited = await waiting;
    expect(waited).toMatchObject({
      status: 'exited',
      outcome: { type: 'completed', attempt_id: `${child.pid}:2` },
    });
    expect((await parent.client.readObject({ oid: waited.result_oid ?? '' })).payload).toEqual({
      worker: survivor,
    });
    expect(await files.lines('runs')).toEqual([`${child.pid}:1 ${ranOn}`, `${child.pid}:2 ${survivor}`]);
    // The dead worker's child never got as far as its token check: only the resumed attempt's is there.
    expect(await cluster.straysAfter(6_000)).toEqual([]);
    expect(await files.lines('token-checks')).toEqual([`${child.pid}:2 200`]);
    expect(await files.lines('runs')).toHaveLength(2);
    expect((await cluster.admin.getProcess(child.pid)).outcome?.attempt_id).toBe(`${child.pid}:2`);
  });
});
