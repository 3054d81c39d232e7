import { LibosError } from '@libos/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Cluster,
  eventually,
  NO_USAGE,
  numberFromRequest,
  READ_REQUEST,
  shImage,
  sleep,
  writeResult,
} from '../src/index.js';

// A primary, two replicas and three sentinels on loopback; a real coordinator and workers reach
// Redis through the sentinels with LIBOS_REDIS_MIN_REPLICAS=1 (and min-replicas-to-write 1 on the
// servers). The primary is SIGKILLed while spawn+wait cycles run, and started again later (it must
// not take writes before Sentinel demotes it). Two replicas: with one, the promoted replica has
// none left and (rightly) refuses every write until the old primary is back as its replica.
const CYCLES = Number(process.env.E2E_FAILOVER_CYCLES ?? 500);
const LOOPS = 16;
const REPLICATION = { LIBOS_REDIS_MIN_REPLICAS: '1', LIBOS_REDIS_REPLICA_TIMEOUT_MS: '1000' };

let cluster: Cluster;

beforeAll(async () => {
  cluster = await Cluster.start({
    sentinel: { replicas: 2, sentinels: 3, downAfterMs: 1000 },
    workers: 2,
    concurrency: 16,
    coordinatorEnv: { ...REPLICATION, LIBOS_RELAUNCH_AFTER_MS: '3000' },
    // A lease outlives a failover (here ~3 s): one that expires meanwhile pauses its process
    // behind a host gate (stale_execution), as the lease contract says.
    workerEnv: { ...REPLICATION, LIBOS_LEASE_MS: '15000' },
  });
  await cluster.admin.putImage('cycle', {
    ...shImage(
      [
        READ_REQUEST,
        numberFromRequest('n'),
        writeResult(`"status":"completed","output":{"n":%s},${NO_USAGE}`, '"$n"'),
      ].join('; '),
    ),
  });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

interface Cycle {
  n: number;
  pid: string;
  outcome: unknown;
  result: string | null;
}

describe('a Sentinel failover during spawn+wait cycles (LIBOS_REDIS_MIN_REPLICAS=1)', () => {
  it('keeps every acknowledged cycle, reconnects without a restart, and never reuses a pid', async () => {
    const group = cluster.sentinel;
    if (!group) throw new Error('no sentinel group');
    const parent = await cluster.root('spawn and wait through a failover', {
      goal: 'spawn and wait through a failover',
      resource_budget: { children: CYCLES * 3 },
    });
    const done: Cycle[] = [];
    const refusals = new Map<string, number>();
    let next = 0;
    let killedAt = -1;
    let killedPort = -1;
    let failedOverAt = -1;
    let failoverMs = -1;
    const began = Date.now();

    const loop = async () => {
      let refusedSince = 0;
      while (done.length < CYCLES) {
        const n = next++;
        let pid: string;
        try {
          const spawned = await parent.client.spawn({ goal: `cycle ${n}`, image: 'cycle', input: { n } });
          pid = spawned.pid;
          refusedSince = 0;
        } catch (error) {
          // Not acknowledged (503 while the primary is gone or has no replica): try another.
          const key =
            error instanceof LibosError ? `${error.code}/${error.details?.reason ?? ''}` : String(error);
          refusals.set(key, (refusals.get(key) ?? 0) + 1);
          refusedSince ||= Date.now();
          if (Date.now() - refusedSince > 60_000) throw new Error(`spawns refused for 60 s (last: ${key})`);
          await sleep(100);
          continue;
        }
        // A blocking wait asks again through outages (it is an observation). Bounded, so a child
        // that never ends fails the test with its row instead of holding it to its timeout.
        let waited: Awaited<ReturnType<typeof parent.client.wait>>;
        try {
          waited = await parent.client.wait({ child_pid: pid }, { signal: AbortSignal.timeout(90_000) });
        } catch (error) {
          const row = await cluster.admin.getProcess(pid).catch(String);
          throw new Error(
            `cycle ${n}: ${pid} not ended after 90 s: ${JSON.stringify(row)} (${String(error)})`,
          );
        }
        done.push({ n, pid, outcome: waited.outcome, result: waited.result_oid });
      }
    };

    const chaos = async () => {
      while (done.length < CYCLES / 5) await sleep(20);
      const old = await group.primaryPort();
      killedPort = old;
      killedAt = done.length;
      const started = Date.now();
      await group.kill(old);
      await group.failedOverFrom(old, 30_000);
      failedOverAt = done.length;
      failoverMs = Date.now() - started;
      // The old primary comes back believing it is the primary: min-replicas-to-write keeps it from
      // taking writes until the sentinels make it a replica of the new one (which then has a
      // replica again, so WAIT 1 is satisfied).
      await group.revive(old);
    };

    await Promise.all([...Array.from({ length: LOOPS }, loop), chaos()]);
    const acknowledged = done;
    expect(killedAt).toBeGreaterThan(0);
    expect(failedOverAt).toBeGreaterThanOrEqual(killedAt);
    // Cycles were acknowledged after the failover too: the parts reconnected without a restart.
    expect(acknowledged.length - failedOverAt).toBeGreaterThan(CYCLES / 2);

    // No pid was handed out twice, and every pid names the process its client was told of.
    const pids = acknowledged.map((cycle) => cycle.pid);
    expect(new Set(pids).size).toBe(pids.length);
    const now = await group.primaryPort();
    expect(group.serverPorts).toContain(now);
    const missing: string[] = [];
    for (const cycle of acknowledged) {
      const row = await cluster.admin.getProcess(cycle.pid);
      if (
        row.goal !== `cycle ${cycle.n}` ||
        row.status !== 'exited' ||
        JSON.stringify(row.outcome) !== JSON.stringify(cycle.outcome) ||
        row.result_oid !== cycle.result
      ) {
        missing.push(
          `${cycle.pid} (cycle ${cycle.n}): ${row.goal} ${row.status} ${JSON.stringify(row.outcome)}`,
        );
      }
    }
    expect(missing).toEqual([]);

    // The revived old primary becomes a replica of the new one: the sentinels reconfigure it once
    // they see it back, which on a busy host can come after the cycles have ended.
    const oldClient = group.client(killedPort);
    try {
      const role = await eventually(
        async () => {
          const [name] = (await oldClient.call('ROLE')) as [string, ...unknown[]];
          return name === 'slave' ? name : undefined;
        },
        { withinMs: 30_000, everyMs: 200, what: 'the old primary to be a replica' },
      );
      expect(role).toBe('slave');
    } finally {
      oldClient.disconnect();
    }
    process.stdout.write(
      `failover: killed after ${killedAt} cycles, new primary named ${failoverMs} ms later (after ${failedOverAt} cycles), ${acknowledged.length} acknowledged in ${Date.now() - began} ms; refused meanwhile: ${JSON.stringify(Object.fromEntries(refusals))}\n`,
    );
  }, 540_000); // 500 sandboxed cycles and a failover: minutes on a slow, loaded 2-core host
});
