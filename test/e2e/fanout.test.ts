import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  asSelf,
  Cluster,
  NO_USAGE,
  numberFromRequest,
  READ_REQUEST,
  shImage,
  WORKER_NAME_VAR,
  writeResult,
} from '../src/index.js';

const FAN = 100;
let cluster: Cluster;

beforeAll(async () => {
  cluster = await Cluster.start({ workers: 2, concurrency: 8 });
  // Each child keeps a memory object of its own (made with its token), then completes with its
  // number, its square and the worker that ran it (workers pass E2E_WORKER on to children).
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
});
afterAll(async () => {
  expect(await cluster?.stop()).toEqual([]);
});

describe('a fan-out of 100 children', () => {
  it('runs on both workers; every result is readable and every child’s memory merges', async () => {
    const parent = await cluster.root('fan out 100 squares', {
      goal: 'fan out',
      resource_budget: { children: FAN, steps: 10 * FAN },
    });
    const spawned = await Promise.all(
      Array.from({ length: FAN }, (_, n) =>
        parent.client.spawn({
          goal: `square ${n}`,
          image: 'square',
          input: { n },
          resource_budget: { children: 0, steps: 10, wall_ms: 60_000 },
        }),
      ),
    );
    expect(new Set(spawned.map((s) => s.pid)).size).toBe(FAN);
    expect(spawned.every((s) => s.status === 'runnable')).toBe(true);

    // One blocking wait per child, all at once: each long-poll is woken by its child's exit.
    const waited = await Promise.all(spawned.map((s) => parent.client.wait({ child_pid: s.pid })));
    const workers = new Map<string, number>();
    let sum = 0;
    for (const [n, answer] of waited.entries()) {
      expect(answer).toMatchObject({
        ready: true,
        status: 'exited',
        outcome: { type: 'completed', attempt_id: `${spawned[n]?.pid}:1` },
      });
      const result = await parent.client.readObject({ oid: answer.result_oid ?? '' });
      expect(result).toMatchObject({ kind: 'PROCESS_RESULT', payload: { n, square: n * n } });
      const { worker, square } = result.payload as { worker: string; square: number };
      workers.set(worker, (workers.get(worker) ?? 0) + 1);
      sum += square;
    }
    // Merged: the sum of all the squares 0² + … + 99².
    expect(sum).toBe(((FAN - 1) * FAN * (2 * FAN - 1)) / 6);
    expect([...workers.keys()].sort()).toEqual([cluster.workerName(0), cluster.workerName(1)]);
    expect(Math.min(...workers.values())).toBeGreaterThan(0);

    // Each child's own object is a root of its memory: merging adopts it into the parent.
    const merged = await Promise.all(spawned.map((s) => parent.client.merge({ child_pid: s.pid })));
    for (const [n, merge] of merged.entries()) {
      expect(merge.merged_oids).toHaveLength(1);
      expect(merge.skipped_oids.map((s) => s.reason)).toEqual(['goal']);
      const kept = await parent.client.readObject({ oid: merge.merged_oids[0] ?? '' });
      expect(kept).toMatchObject({ owner: parent.pid, payload: { kept: n }, kind: 'PROCESS' });
    }

    const listed = await parent.client.listChildren();
    expect(listed.children).toHaveLength(FAN);
    expect(listed.children.every((c) => c.status === 'exited' && c.merged)).toBe(true);
    const budget = (await parent.client.getProcess()).resource_budget;
    expect(budget.children.used).toBe(FAN);
    expect(budget.steps.used).toBe(FAN);
  });
});
