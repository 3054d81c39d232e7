import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  completed,
  eventually,
  image,
  REQUEST_ID,
  readLines,
  root,
  scratch,
  sh,
  sleep,
  spawn,
  useHarness,
  waitChild,
} from './helpers.js';

// appendfsync always: every acknowledged write survives the crash.
const h = useHarness({ aof: true });
let files: Awaited<ReturnType<typeof scratch>>;
const lines: string[] = [];

beforeAll(async () => {
  files = await scratch();
  await h.startWorker(
    {},
    pino({ level: 'info', base: null }, { write: (line: string) => void lines.push(line) }),
  );
});
afterAll(() => files?.cleanup());

async function slowChild(seconds: string) {
  const started = files.file(`started-${seconds}`);
  const slow = await image(
    h,
    sh(
      `read -r request; ${REQUEST_ID}; echo "$id" >> "$2"; sleep ${seconds}; ${completed('"survived"')}`,
      started,
    ),
  );
  const parent = await root(h);
  const child = await spawn(h, parent, slow);
  await eventually(async () => ((await readLines(started)).length === 1 ? true : undefined));
  return { parent, child, started };
}

describe('Redis failures while a child runs', () => {
  it('a crash loses neither the attempt nor its completion: the worker reconnects, renews and reports', async () => {
    const { parent, child, started } = await slowChild('1.2');
    await h.server.crash?.();
    const waited = await waitChild(h, parent, child, 20_000);
    expect(waited).toMatchObject({
      status: 'exited',
      outcome: { type: 'completed', attempt_id: `${child}:1` },
    });
    expect(
      (await h.kernel.tools.read_object({ pid: parent }, { oid: waited.result_oid ?? '' })).payload,
    ).toBe('survived');
    expect(await readLines(started)).toEqual([`${child}:1`]);
  });

  it('a completion that meets an unreachable Redis is retried until it lands', async () => {
    const { parent, child } = await slowChild('0.3');
    // Redis refuses new connections and drops the worker's, across the child's ending.
    const admin = new Redis(h.server.url);
    await admin.config('SET', 'maxclients', '1');
    await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await sleep(1_200);
    await admin.config('SET', 'maxclients', '10000');
    admin.disconnect();
    const waited = await waitChild(h, parent, child, 20_000);
    expect(waited).toMatchObject({ status: 'exited', outcome: { type: 'completed' } });
    const retried = lines.filter((line) => line.includes(child) && line.includes('completion: retrying'));
    expect(retried.length).toBeGreaterThan(0);
    // A crash and dropped connections are outages the worker rides out, not a lost connection.
    expect(lines.filter((line) => line.includes('cannot go on'))).toEqual([]);
  });
});
