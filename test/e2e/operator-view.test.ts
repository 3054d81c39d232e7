import { execFile } from 'node:child_process';
import { shChildLaunch } from '@libos/examples';
import { launchJobId, launchQueueName } from '@libos/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ADMIN_TOKEN,
  bearer,
  CLI_SOURCE,
  Cluster,
  NO_USAGE,
  READ_REQUEST,
  rawRequest,
  shImage,
  writeResult,
} from '../src/index.js';

let cluster: Cluster;

/** `libos <args>` against the cluster, from source. */
function libos(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--conditions=@libos/source', CLI_SOURCE, '--url', cluster.url, ...args],
      { env: { ...process.env, LIBOS_ADMIN_TOKEN: ADMIN_TOKEN, NO_COLOR: '1' } },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** The part of Bull Board's `GET /api/queues` answer read here. */
const boardSchema = z.object({
  queues: z.array(
    z.object({
      name: z.string(),
      jobs: z.array(
        z.object({
          id: z.string(),
          data: z.unknown(),
          progress: z.unknown().optional(),
          failedReason: z.string().nullable().optional(),
        }),
      ),
    }),
  ),
});

beforeAll(async () => {
  cluster = await Cluster.start({ workers: 1 });
  await cluster.admin.putImage('echo', shChildLaunch('echo'));
  await cluster.admin.putImage('quitter', shChildLaunch('exits-without-result', '3'));
  await cluster.admin.putImage(
    'yielder',
    shImage(
      `${READ_REQUEST}; ${writeResult(`"status":"context_yield","reason":"my context is full",${NO_USAGE}`)}`,
    ),
  );
}, 60_000);
afterAll(async () => {
  expect(await cluster?.stop()).toEqual([]);
});

describe('what an operator sees of a tree', () => {
  it('ps --root lists it newest first in numeric order; describe tells a child’s attempts and outcome; the board shows failures as failed jobs', async () => {
    const parent = await cluster.root('operator view');
    const kids: string[] = [];
    for (let i = 0; i < 10; i++)
      kids.push((await parent.client.spawn({ goal: `echo ${i}`, image: 'echo', input: { n: i } })).pid);
    const quitter = (await parent.client.spawn({ goal: 'quit without a result', image: 'quitter' })).pid;
    const yielder = (await parent.client.spawn({ goal: 'yield', image: 'yielder' })).pid;
    for (const pid of [...kids, quitter, yielder]) await parent.client.wait({ child_pid: pid });

    // a context_yield child's own words reach its outcome
    const yielded = await cluster.admin.getProcess(yielder);
    expect(yielded.outcome).toMatchObject({ type: 'context_yield', reason: 'my context is full' });

    const ps = await libos(['ps', '--root', parent.pid]);
    expect(ps.code, ps.stderr).toBe(0);
    const [header, ...rows] = ps.stdout.trimEnd().split('\n');
    expect(header?.split(/\s+/)).toEqual([
      'PID',
      'PARENT',
      'STATUS',
      'IMAGE',
      'AGE',
      'STARTED',
      'ENDED',
      'OUTCOME',
      'GOAL',
    ]);
    const order = rows.map((row) => row.split(/\s+/)[0]);
    expect(order).toEqual(
      [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1].map((n) => `${parent.pid}.${n}`).concat(parent.pid),
    );
    const quitRow = rows.find((row) => row.startsWith(`${quitter} `)) ?? '';
    expect(quitRow).toMatch(/ failed +quitter +\d+s +\d+s +\d+s +failed: /);

    const tree = await libos(['ps', '--root', parent.pid, '--tree']);
    const lines = tree.stdout.split('\n');
    const at = (pid: string) => lines.findIndex((line) => line.includes(`${pid} `));
    expect(at(`${parent.pid}.2`)).toBeLessThan(at(`${parent.pid}.10`));

    const parentOnly = await libos(['--json', 'ps', '--parent', parent.pid, '--image', 'quitter']);
    expect((JSON.parse(parentOnly.stdout) as { pid: string }[]).map((p) => p.pid)).toEqual([quitter]);

    const described = await libos(['describe', quitter]);
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toMatch(/status: +failed/);
    expect(described.stdout).toMatch(/goal: +quit without a result/);
    expect(described.stdout).toMatch(/outcome: +failed: the child exited 3/);
    expect(described.stdout).toMatch(/ATTEMPT +WORKER +CLAIMED +ENDED +AS/);
    expect(described.stdout).toMatch(/\n1 +e2e-0 +\S+ +\S+ +failed: the child exited 3/);
    const json = JSON.parse((await libos(['--json', 'describe', quitter])).stdout) as {
      attempts: { worker: string; ended_as: string }[];
      process: { started_at: string; ended_at: string };
    };
    expect(json.attempts).toEqual([expect.objectContaining({ worker: 'e2e-0', ended_as: 'failed' })]);
    expect(json.process.ended_at).not.toBeNull();

    // Bull Board: the failed child is a failed job with the outcome's reason; progress shows it
    const queue = launchQueueName('default');
    const answer = await rawRequest(
      cluster.url,
      'GET',
      `/admin/queues/api/queues?activeQueue=${encodeURIComponent(queue)}&status=failed&jobsPerPage=100`,
      { auth: bearer(ADMIN_TOKEN) },
    );
    const jobs = boardSchema.parse(answer.body).queues.find((q) => q.name === queue)?.jobs ?? [];
    const failed = jobs.find((job) => job.id === launchJobId(quitter, 1));
    expect(failed?.data).toEqual({ pid: quitter, attempt: 1 });
    expect(failed?.failedReason).toMatch(
      new RegExp(`^${quitter.replace('.', '\\.')} failed \\(failed: the child exited 3`),
    );
    expect(failed?.progress).toMatchObject({
      pid: quitter,
      goal: 'quit without a result',
      image: 'quitter',
      status: 'failed',
    });
    const yieldJob = jobs.find((job) => job.id === launchJobId(yielder, 1));
    expect(yieldJob?.failedReason).toBe(`${yielder} failed (context_yield: my context is full)`);
    // the exited ones are not among the failed jobs
    expect(jobs.map((job) => job.id)).not.toContain(launchJobId(kids[0] ?? '', 1));
  });

  it('describe and ps refuse a bad pid in one line', async () => {
    const bad = await libos(['describe', 'nope']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr.trim()).toBe('libos: pid: nope is not a pid (e.g. p4k9x2m7q or p4k9x2m7q.12)');
    const missing = await libos(['describe', 'pmissing1']);
    expect(missing.stderr.trim()).toMatch(/^libos: .*no such process pmissing1/);
    const notRoot = await libos(['ps', '--root', 'pmissing1.3']);
    expect(notRoot.stderr.trim()).toBe(
      'libos: --root pmissing1.3 is not a root pid: use --parent pmissing1.3, or its root pmissing1',
    );
  });
});
