import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Cluster,
  eventually,
  numberFromRequest,
  READ_REQUEST,
  type Scratch,
  scratch,
  shImage,
  waitForFile,
  wordFromRequest,
  writeResult,
} from '../src/index.js';

const WAITS = 50;
let cluster: Cluster;
let files: Scratch;

beforeAll(async () => {
  files = await scratch();
  cluster = await Cluster.start({
    workers: 2,
    concurrency: 30,
    // Short long-poll windows, so the SDK's blocking waits also re-poll on their own.
    coordinatorEnv: { LIBOS_LONG_POLL_MS: '1500' },
  });
  // Held until the test creates "go-<group>"; then even numbers complete with {n}, odd ones end no_report.
  await cluster.admin.putImage('gated', {
    ...shImage(
      [
        READ_REQUEST,
        numberFromRequest('n'),
        wordFromRequest('group'),
        waitForFile('$2/go-$group', 0.3),
        'echo "$n" >> "$2/done"',
        `if [ $((n % 2)) -eq 0 ]; then ${writeResult('"status":"completed","output":{"n":%s}', '"$n"')}; else ${writeResult('"status":"no_report"')}; fi`,
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

/** Every launched child has its OS process and the waiting parents are recorded as waiting. */
async function allBlocked(parents: { pid: string }[], children: { pid: string }[]) {
  await eventually(
    async () => {
      const views = await Promise.all([...parents, ...children].map((p) => cluster.admin.getProcess(p.pid)));
      const waiting = views.slice(0, parents.length).every((v) => v.status === 'waiting_event');
      const running = views.slice(parents.length).every((v) => v.status === 'running');
      return waiting && running ? true : undefined;
    },
    { withinMs: 30_000, what: 'every parent waiting and every child running' },
  );
}

async function doneCount(count: number) {
  await eventually(async () => ((await files.lines('done')).length >= count ? true : undefined), {
    withinMs: 30_000,
    what: `${count} children done`,
  });
}

describe('a coordinator restarted during 50 blocking waits', () => {
  it('SIGTERM and then SIGKILL: every wait still gets its own child’s answer', async () => {
    const parents = await Promise.all(Array.from({ length: WAITS }, (_, n) => cluster.root(`parent ${n}`)));
    const children = await Promise.all(
      parents.map((parent, n) =>
        parent.client.spawn({
          goal: `gated ${n}`,
          image: 'gated',
          input: { n, group: n < WAITS / 2 ? 'a' : 'b' },
        }),
      ),
    );
    const waits = parents.map((parent, n) => parent.client.wait({ child_pid: children[n]!.pid }));
    const answered = new Set<number>();
    waits.forEach((wait, n) => void wait.then(() => answered.add(n)));
    const groupA = waits.slice(0, WAITS / 2);
    const groupB = waits.slice(WAITS / 2);
    await allBlocked(parents, children);

    // A graceful stop answers the open long-polls `ready: false`; the SDK asks again until it is back.
    await cluster.stopCoordinator('SIGTERM');
    await files.touch('go-a'); // group a ends while no coordinator runs: the workers record it in Redis
    await doneCount(WAITS / 2);
    expect(answered.size).toBe(0);
    await cluster.startCoordinator();
    await Promise.all(groupA);

    await allBlocked(parents.slice(WAITS / 2), children.slice(WAITS / 2));
    expect(answered.size).toBe(WAITS / 2);
    // A crash: connections reset mid-poll.
    await cluster.stopCoordinator('SIGKILL');
    await files.touch('go-b');
    await doneCount(WAITS);
    await cluster.startCoordinator();
    await Promise.all(groupB);

    const answers = await Promise.all(waits);
    for (const [n, answer] of answers.entries()) {
      const child = children[n]!.pid;
      expect(answer.child_pid).toBe(child);
      if (n % 2 === 0) {
        expect(answer, `wait ${n}`).toMatchObject({
          ready: true,
          status: 'exited',
          outcome: { type: 'completed' },
        });
        const result = await parents[n]!.client.readObject({ oid: answer.result_oid ?? '' });
        expect(result.payload).toEqual({ n });
      } else {
        expect(answer, `wait ${n}`).toMatchObject({
          ready: true,
          status: 'failed',
          outcome: { type: 'no_report' },
          result_oid: null,
        });
      }
      expect((await cluster.admin.getProcess(parents[n]!.pid)).status).toBe('running');
    }
  });
});
