import { ALL_INDEX_SHARDS, INDEX_SHARDS, mintToken } from '@libos/kernel';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { Reaper, type ReapReport } from '../src/reaper.js';
import { type Harness, startHarness } from './helpers.js';

// Two coordinators' reapers on one Redis (two Reaper instances; the harness's own never sweeps).
let h: Harness;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const quiet = pino({ level: 'silent' });

beforeAll(async () => {
  h = await startHarness({ LIBOS_REAPER_INTERVAL_MS: '3600000' });
  await h.admin.putImage('echo', { command: 'sh', args: ['-c', 'exit 0', 'sh', '{result_file}'] });
});
afterAll(async () => {
  await h.stop();
});

function reaper(holdMs: number): Reaper {
  const { kernel, launcher } = h.coordinator;
  return new Reaper(kernel, launcher, quiet, { intervalMs: 3_600_000, relaunchAfterMs: 3_600_000, holdMs });
}

/** Sweeps taking turns until the two hold half the shards each (a newcomer waits for the excess). */
async function split(a: Reaper, b: Reaper): Promise<[number[], number[]]> {
  await a.sweep(); // all shards
  await b.sweep(); // none free yet
  await a.sweep(); // lets go of half
  const [held, taken] = [(await a.sweep()).shards, (await b.sweep()).shards];
  expect(held).toHaveLength(INDEX_SHARDS / 2);
  expect(taken).toHaveLength(INDEX_SHARDS / 2);
  expect([...held, ...taken].sort((x, y) => x - y)).toEqual(ALL_INDEX_SHARDS);
  return [held, taken];
}

/** Launched roots claimed with a 50 ms lease, until both halves of the shards have some. */
async function expiringLeases(halves: number[][]): Promise<string[]> {
  const { kernel } = h.coordinator;
  const pids: string[] = [];
  const covered = () =>
    halves.every((half) => pids.some((pid) => half.includes(kernel.keys.indexShardOf(pid))));
  while (pids.length < 8 || !covered()) {
    const { pid } = await kernel.admin.createRoot({ goal: 'leased', image: 'echo', launch: true });
    await kernel.worker.claim(pid, 1, { workerId: 'gone', tokenHash: mintToken(pid).tokenHash, leaseMs: 50 });
    pids.push(pid);
  }
  await sleep(100);
  return pids;
}

const recoveredBy = (report: ReapReport) => report.recovered.map((r) => r.pid);

test('two reapers split the index shards and reap every expired lease exactly once', async () => {
  const { kernel } = h.coordinator;
  const a = reaper(5_000);
  const b = reaper(5_000);
  const [heldA, heldB] = await split(a, b);
  const leased = await expiringLeases([heldA, heldB]);

  const [first, second] = await Promise.all([a.sweep(), b.sweep()]);
  expect(first.shards).toEqual(heldA);
  expect(second.shards).toEqual(heldB);
  const reaped = [...recoveredBy(first), ...recoveredBy(second)];
  expect([...reaped].sort()).toEqual([...leased].sort());
  for (const pid of recoveredBy(first)) expect(heldA).toContain(kernel.keys.indexShardOf(pid));
  for (const pid of recoveredBy(second)) expect(heldB).toContain(kernel.keys.indexShardOf(pid));
  expect(recoveredBy(first).length).toBeGreaterThan(0);
  expect(recoveredBy(second).length).toBeGreaterThan(0);
  for (const pid of leased) expect((await kernel.admin.getProcess(pid)).status).toBe('paused');
  // once: the next sweeps find nothing left
  const again = await Promise.all([a.sweep(), b.sweep()]);
  expect(again.flatMap(recoveredBy)).toEqual([]);

  // a coordinator stopping lets go of its shards: the other takes all of them at its next sweep
  await a.stop();
  expect((await b.sweep()).shards).toEqual(ALL_INDEX_SHARDS);
  await b.stop();
});

test("a dead coordinator's shards go to the survivor once its hold lapses, and their leases are reaped", async () => {
  const { kernel } = h.coordinator;
  // The hold outlasts making the leases below with room for a loaded CI host (300 ms did not).
  const dead = reaper(1_500);
  const survivor = reaper(1_500);
  const [heldDead] = await split(dead, survivor);
  // `dead` never sweeps again; a lease in one of its shards expires meanwhile
  const leased = (await expiringLeases([heldDead])).filter((pid) =>
    heldDead.includes(kernel.keys.indexShardOf(pid)),
  );
  const meanwhile = recoveredBy(await survivor.sweep());
  for (const pid of leased) expect(meanwhile).not.toContain(pid);
  await sleep(1_550);
  const report = await survivor.sweep();
  expect(report.shards).toEqual(ALL_INDEX_SHARDS);
  expect(recoveredBy(report)).toEqual(expect.arrayContaining(leased));
  await survivor.stop();
});
