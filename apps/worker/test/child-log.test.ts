import { beforeAll, describe, expect, it } from 'vitest';
import { AttemptLog } from '../src/child-log.js';
import { completed, image, REQUEST_ID, root, sh, spawn, useHarness, waitChild } from './helpers.js';

const h = useHarness();

beforeAll(async () => {
  await h.startWorker({ LIBOS_CHILD_LOG_BYTES: '4096', LIBOS_CHILD_LOG_LINE_BYTES: '100' });
});

async function run(script: string): Promise<string> {
  const name = await image(h, sh(`read -r request; ${REQUEST_ID}; ${script}; ${completed('1')}`));
  const parent = await root(h);
  const child = await spawn(h, parent, name);
  await waitChild(h, parent, child);
  return child;
}

describe('a child’s output', () => {
  it('is stored per attempt with its stream, and the log has ended when the process has', async () => {
    const child = await run(`echo 'to stdout'; echo 'to stderr' >&2; printf 'no newline' >&2`);
    const page = await h.kernel.logs.read(child);
    expect(page).toMatchObject({ attempt: 1, ended: true, dropped_bytes: 0 });
    const lines = page.lines.map((l) => [l.stream, l.line]);
    // one stream's lines keep their order; the two streams interleave as the pipes deliver
    expect(lines.filter(([s]) => s === 'stderr')).toEqual([
      ['stderr', 'to stderr'],
      ['stderr', 'no newline'],
    ]);
    expect(lines.filter(([s]) => s === 'stdout')).toEqual([['stdout', 'to stdout']]);
    for (const line of page.lines) expect(Date.parse(line.time)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('costs no Redis call for a child that writes nothing', async () => {
    const child = await run('true');
    expect(await h.redis.exists(h.kernel.keys.logMeta(child), h.kernel.keys.log(child, 1))).toBe(0);
    expect(await h.kernel.logs.read(child)).toMatchObject({ ended: true, lines: [] });
  });

  it('keeps LIBOS_CHILD_LOG_BYTES, dropping the oldest, and cuts lines over LIBOS_CHILD_LOG_LINE_BYTES', async () => {
    const child = await run(
      `i=0; while [ $i -lt 400 ]; do echo "line $i of the flood" >&2; i=$((i+1)); done; head -c 250 /dev/zero | tr '\\0' x; echo`,
    );
    const page = await h.kernel.logs.read(child);
    const stored = page.lines.reduce((sum, l) => sum + Buffer.byteLength(l.line) + 1 + 32, 0);
    expect(stored).toBeLessThanOrEqual(4096);
    expect(page.dropped_bytes).toBeGreaterThan(0);
    const flood = page.lines.filter((l) => l.stream === 'stderr').map((l) => l.line);
    expect(flood.at(-1)).toBe('line 399 of the flood');
    // every line of the flood is either kept or counted as dropped
    const all = Array.from({ length: 400 }, (_, i) => `line ${i} of the flood`);
    expect(flood).toEqual(all.slice(400 - flood.length));
    const droppedFlood = all.slice(0, 400 - flood.length).reduce((sum, l) => sum + l.length + 1, 0);
    expect(page.dropped_bytes).toBe(droppedFlood);
    expect(page.lines.find((l) => l.stream === 'stdout')?.line).toBe(
      `${'x'.repeat(100)} … [line cut: 150 more bytes]`,
    );
  });
});

describe('AttemptLog', () => {
  it('sends at most one bound per second under a flood and keeps at most the bound waiting', async () => {
    const batches: { bytes: number; dropped: number; lines: number; end: boolean }[] = [];
    let broken = 0;
    const log = new AttemptLog(
      async (batch) => {
        broken += batch.lines.filter((l) => l[2] !== 'y'.repeat(99)).length;
        batches.push({
          bytes: batch.lines.reduce((sum, l) => sum + Buffer.byteLength(l[2]) + 1 + 32, 0),
          dropped: batch.dropped,
          lines: batch.lines.length,
          end: batch.end,
        });
      },
      { maxBytes: 64 * 1024, lineBytes: 1024, flushMs: 20 },
      () => undefined,
    );
    const chunk = Buffer.from(`${'y'.repeat(99)}\n`.repeat(640)); // 64000 bytes, 640 lines
    const started = Date.now();
    let written = 0;
    while (Date.now() - started < 1_500) {
      // cut mid-line, so dropping leaves halves of lines to be dropped too
      log.stderr(chunk.subarray(0, 12_345));
      log.stderr(chunk.subarray(12_345));
      written += chunk.length;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await log.end();
    // raw bytes sent (lines of 100 bytes): what waits is within the bound but for the newest chunk
    const sent = batches.reduce((sum, b) => sum + b.lines * 100, 0);
    expect(written).toBeGreaterThan(10 * sent); // most of the flood never left
    for (const batch of batches) expect(batch.lines * 100).toBeLessThanOrEqual(64 * 1024 + chunk.length);
    // one bound at once, then at most about one bound a second (1.5 s of flood, the last batch)
    expect(sent).toBeLessThanOrEqual(4 * (64 * 1024 + chunk.length));
    expect(batches.at(-1)?.end).toBe(true);
    expect(broken).toBe(0); // no half of a line whose other half was dropped
    const total = batches.reduce((sum, b) => sum + b.dropped + b.lines * 100, 0);
    expect(total).toBe(written); // every byte is sent or counted as dropped
  });
});
