import { scriptNames } from '@libos/kernel';
import { launchJobId } from '@libos/protocol';
import { ReplyCutter } from '@libos/testkit';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  completed,
  eventually,
  image,
  REQUEST_ID,
  root,
  sh,
  spawn,
  useHarness,
  waitChild,
} from './helpers.js';

// The worker reaches Redis through a proxy that can lose the answer to one command.
const h = useHarness();
let cutter: ReplyCutter;
const lines: string[] = [];
const COMPLETE_SHA = [...scriptNames()].find(([, name]) => name === 'complete')?.[0] ?? 'no complete script';

beforeAll(async () => {
  cutter = await ReplyCutter.start(h.server.url);
  await h.startWorker(
    { LIBOS_REDIS_URL: cutter.url },
    pino({ level: 'info', base: null }, { write: (line: string) => void lines.push(line) }),
  );
});
afterAll(() => cutter?.close());

describe('a completion whose answer is lost', () => {
  it('ends the launch job as the process ended: a failed process is a failed job, and its card says so', async () => {
    const parent = await root(h);
    // A first child loads the completion script into the server, so the one below is sent by
    // its SHA (a NOSCRIPT reply would be the one lost, and the script would not have run).
    const quick = await image(h, sh(`read -r request; ${REQUEST_ID}; ${completed('1')}`));
    expect((await waitChild(h, parent, await spawn(h, parent, quick))).status).toBe('exited');

    // Past a second, so the board showed it `running` before it ended.
    const failing = await image(
      h,
      sh(
        `read -r request; ${REQUEST_ID}; sleep 1.3; printf '{"version":1,"request_id":"%s","status":"failed","reason":"it broke"}' "$id" > "$1"`,
      ),
    );
    const cut = cutter.cutReplyTo(COMPLETE_SHA);
    const child = await spawn(h, parent, failing);
    await cut;
    expect(cutter.cuts).toBe(1);
    const waited = await waitChild(h, parent, child);
    expect(waited).toMatchObject({ status: 'failed', outcome: { type: 'failed', reason: 'it broke' } });

    const id = launchJobId(child, 1);
    await eventually(async () => ((await h.queue().getJobState(id)) === 'failed' ? true : undefined));
    const job = await h.queue().getJob(id);
    expect(job?.failedReason).toBe(`${child} failed (failed: it broke)`);
    expect(job?.progress).toMatchObject({
      pid: child,
      status: 'failed',
      outcome: { type: 'failed', reason: 'it broke' },
    });
    // The script had run: the worker's retry found the completion recorded.
    expect(
      lines.filter((line) => line.includes(child) && line.includes('completion already recorded')),
    ).toHaveLength(1);
  });
});
