import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, image, readLines, root, scratch, sh, spawn, useHarness, waitChild } from './helpers.js';

const h = useHarness();
let files: Awaited<ReturnType<typeof scratch>>;

beforeAll(async () => {
  files = await scratch();
});
afterAll(() => files?.cleanup());

/** Client connections Redis sees, minus those of the test itself. */
async function clients(probe: Redis, own: number): Promise<number> {
  const list = await probe.client('LIST');
  return (
    String(list)
      .split('\n')
      .filter((line) => line.trim() !== '').length - own
  );
}

describe('Redis connections', () => {
  it('are bounded: a few per worker and one blocking per pool, none per child', async () => {
    const probe = new Redis(h.server.url);
    await h.kernel.admin.listImages(); // the harness's own connections are all open now
    await h.queue('a').getJobCounts();
    await h.queue('b').getJobCounts();
    const own = await clients(probe, 0);
    await h.startWorker({ LIBOS_POOLS: 'a,b', LIBOS_CONCURRENCY: '4' });
    const idle = await clients(probe, own);
    const started = files.file('started');
    const wait = await image(h, {
      ...sh('umask 0; read -r request; echo go >> "$2"; read -r _', started),
      pool: 'a',
    });
    const parent = await root(h);
    const children = await Promise.all([1, 2, 3, 4].map(() => spawn(h, parent, wait)));
    await eventually(async () => ((await readLines(started)).length === 4 ? true : undefined));
    const busy = await clients(probe, own);
    // kernel commands, the kernel's subscriber, BullMQ's shared connection, one blocking per pool
    expect(busy).toBeLessThanOrEqual(5);
    expect(busy - idle).toBeLessThanOrEqual(1); // at most the subscriber, opened on first use
    for (const child of children) await h.kernel.admin.signal(child, { signal: 'cancel' });
    for (const child of children) expect((await waitChild(h, parent, child)).status).toBe('killed');
    probe.disconnect();
  });
});
