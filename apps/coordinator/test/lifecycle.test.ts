import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintToken } from '@libos/kernel';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type Harness, raw, startHarness } from './helpers.js';

let h: Harness;
let archiveDir: string;
let redis: Redis;
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  archiveDir = await mkdtemp(join(tmpdir(), 'libos-archive-'));
  h = await startHarness(
    // the sweep runs on demand here (POST /v1/admin/gc), not on its own
    {
      LIBOS_ARCHIVE_DIR: archiveDir,
      LIBOS_GC_INTERVAL_MS: '3600000',
      // read on demand (memoryGuard.refresh), with a low mark so Redis keeps ample room above it
      LIBOS_REDIS_MEMORY_CHECK_MS: '3600000',
      LIBOS_REDIS_MEMORY_HIGH_WATER: '0.5',
    },
    { own: true },
  );
  redis = new Redis(h.redis.url);
  await h.admin.putImage('echo', { command: 'sh', args: ['-c', 'exit 0', 'sh', '{result_file}'] });
});
afterAll(async () => {
  redis?.disconnect();
  await h?.stop();
  await rm(archiveDir, { recursive: true, force: true });
});

/** Run a spawned child as a worker would, through the coordinator's kernel. */
async function finish(pid: string, report = 'ok') {
  const { kernel } = h.coordinator;
  const minted = mintToken(pid);
  const claimed = await kernel.worker.claim(pid, 1, {
    workerId: 'w',
    tokenHash: minted.tokenHash,
    leaseMs: 60_000,
  });
  await kernel.worker.complete(pid, 1, claimed.fence, {
    terminal: { type: 'captured' },
    report,
    usage: { prompt_tokens: 0, completion_tokens: 0, steps: 0, wall_ms: 1 },
  });
}

async function archived(): Promise<{ pid: string; process: { status: string } }[]> {
  const lines: { pid: string; process: { status: string } }[] = [];
  for (const file of await readdir(archiveDir)) {
    expect(file).toMatch(/^\d{4}-\d{2}-\d{2}\.jsonl$/);
    for (const line of (await readFile(join(archiveDir, file), 'utf8')).split('\n').filter(Boolean))
      lines.push(JSON.parse(line));
  }
  return lines;
}

describe('retention over HTTP', () => {
  it('deletes a waited-on child after retention (404, gone from its parent’s list), archived first; keeps an unwaited one', async () => {
    const root = await h.admin.createProcess({
      goal: 'keeper',
      retention_ms: 200,
      resource_budget: { children: 4 },
    });
    const parent = h.as(root.token!);
    const waited = await parent.spawn({ goal: 'waited', image: 'echo' });
    const unwaited = await parent.spawn({ goal: 'unwaited', image: 'echo' });
    await finish(waited.pid);
    await finish(unwaited.pid);
    expect((await parent.wait({ child_pid: waited.pid })).ready).toBe(true);
    await sleep(250);

    const gc = await raw(h.coordinator.url, '/v1/admin/gc', { method: 'POST', headers: admin });
    expect(gc.status).toBe(200);
    expect(gc.body).toMatchObject({ deleted: 1 });

    const gone = await raw(h.coordinator.url, `/v1/admin/processes/${waited.pid}`, { headers: admin });
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({
      error: { code: 'not_found', details: { reason: 'deleted' } },
    });
    expect((gone.body as { error: { message: string } }).error.message).toContain(
      'deleted after its retention period',
    );
    const children = await parent.listChildren({ include_terminal: true });
    expect(children.children.map((c) => c.pid)).toEqual([unwaited.pid]);
    expect((await archived()).find((line) => line.pid === waited.pid)?.process.status).toBe('exited');
    // the status index no longer lists it
    const listed = await h.admin.listProcesses({ status: 'exited', limit: 1000 });
    expect(listed.processes.map((p) => p.pid)).not.toContain(waited.pid);
  });

  it('DELETE /v1/admin/processes/{pid} refuses a live tree (409) and deletes a terminal one at once', async () => {
    const root = await h.admin.createProcess({ goal: 'to delete', resource_budget: { children: 2 } });
    const parent = h.as(root.token!);
    const child = await parent.spawn({ goal: 'c', image: 'echo' });
    await finish(child.pid);
    const live = await raw(h.coordinator.url, `/v1/admin/processes/${root.pid}`, {
      method: 'DELETE',
      headers: admin,
    });
    expect(live.status).toBe(409);
    expect(live.body).toMatchObject({
      error: { code: 'failed_precondition', details: { reason: 'not_terminal' } },
    });

    await parent.exit({});
    const deleted = await raw(h.coordinator.url, `/v1/admin/processes/${root.pid}`, {
      method: 'DELETE',
      headers: admin,
    });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ pid: root.pid, deleted: 2 });
    expect((await raw(h.coordinator.url, `/v1/admin/processes/${root.pid}`, { headers: admin })).status).toBe(
      404,
    );
    expect(await redis.keys(`libos:{${root.pid}}:*`)).toEqual([]);
    const lines = await archived();
    expect(lines.filter((line) => [root.pid, child.pid].includes(line.pid))).toHaveLength(2);
    // the SDK's calls for the same routes
    await expect(h.admin.deleteProcess(root.pid)).rejects.toMatchObject({ code: 'not_found' });
    expect(await h.admin.gc()).toMatchObject({ deleted: 0 });
  });
});

describe('the Redis memory guard', () => {
  it('refuses new work above the high-water mark, lets work in flight finish, and accepts again below it', async () => {
    const root = await h.admin.createProcess({ goal: 'guarded', resource_budget: { children: 4 } });
    const parent = h.as(root.token!);
    const inFlight = await parent.spawn({ goal: 'in flight', image: 'echo' });

    const used = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
    // 60% full: over the 50% mark, with room left before Redis itself refuses writes (noeviction, at 100%)
    await redis.config('SET', 'maxmemory', String(Math.floor(used / 0.6)));
    try {
      await h.coordinator.memoryGuard.refresh();
      const refused = await raw(h.coordinator.url, '/v1/tools/spawn_child_process', {
        method: 'POST',
        token: root.token!,
        body: JSON.stringify({ goal: 'new', image: 'echo' }),
      });
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({
        error: { code: 'unavailable', details: { reason: 'redis_memory' } },
      });
      for (const [path, body] of [
        ['/v1/tools/create_object', { payload: 1 }],
        ['/v1/tools/send_process_message', { to: 'self', body: 'x' }],
      ] as const) {
        const r = await raw(h.coordinator.url, path, {
          method: 'POST',
          token: root.token!,
          body: JSON.stringify(body),
        });
        expect(r.status).toBe(503);
      }
      const newRoot = await raw(h.coordinator.url, '/v1/admin/processes', {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ goal: 'another' }),
      });
      expect(newRoot.status).toBe(503);
      const metrics = await raw(h.coordinator.url, '/metrics');
      expect(metrics.text).toMatch(/^libos_redis_memory_guard 1$/m);
      expect(metrics.text).toMatch(/^libos_redis_maxmemory_bytes [1-9]\d*$/m);

      // work in flight completes: the child finishes and its parent's wait answers
      await finish(inFlight.pid, 'finished under pressure');
      const done = await parent.wait({ child_pid: inFlight.pid });
      expect(done).toMatchObject({ ready: true, status: 'exited' });
      expect((await parent.readObject({ oid: done.result_oid! })).payload).toBe('finished under pressure');
    } finally {
      await redis.config('SET', 'maxmemory', '0');
    }
    await h.coordinator.memoryGuard.refresh();
    const accepted = await parent.spawn({ goal: 'after', image: 'echo' });
    expect(accepted.status).toBe('runnable');
    expect((await raw(h.coordinator.url, '/metrics')).text).toMatch(/^libos_redis_memory_guard 0$/m);
  });
});

describe('Redis at its maxmemory', () => {
  it('refuses a write as 503 unavailable/redis_memory with nothing written, before the guard has read it', async () => {
    const root = await h.admin.createProcess({ goal: 'full redis' });
    const before = await h.as(root.token!).getProcess({});
    await redis.config('SET', 'maxmemory', '1');
    let refused: Awaited<ReturnType<typeof raw>>;
    try {
      // the guard has not read Redis since: Redis's own refusal is what answers
      refused = await raw(h.coordinator.url, '/v1/tools/create_object', {
        method: 'POST',
        token: root.token!,
        body: JSON.stringify({ payload: 'new' }),
      });
    } finally {
      await redis.config('SET', 'maxmemory', '0');
    }
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({
      error: { code: 'unavailable', details: { reason: 'redis_memory' } },
    });
    const after = await h.as(root.token!).getProcess({});
    expect(after.state_generation).toBe(before.state_generation);
    await expect(h.admin.readObject(`${root.pid}/o2`)).rejects.toMatchObject({ code: 'not_found' });
  });
});
