import { shChildLaunch } from '@libos/examples';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventually,
  image,
  readLines,
  root,
  scratch,
  sh,
  spawn,
  useHarness,
  view,
  waitChild,
} from './helpers.js';

const h = useHarness();
let files: Awaited<ReturnType<typeof scratch>>;

beforeAll(async () => {
  files = await scratch();
});
afterAll(() => files?.cleanup());

describe('graceful shutdown', () => {
  it('takes no new launch, lets children finish within the grace, then cancels the rest through the contract', async () => {
    const started = files.file('started');
    const quick = await image(h, shChildLaunch('sleep-then-complete', '0.2'));
    const aware = await image(
      h,
      sh(`umask 0; echo aware >> "$2"; exec sh "$3" "$1"`, started, shChildPath('cancel-aware')),
    );
    const stubborn = await image(h, {
      ...sh(`umask 0; read -r request; echo stubborn >> "$2"; sleep 30 & wait`, started),
      cancel_grace_ms: 300,
    });
    const worker = await h.startWorker({ LIBOS_SHUTDOWN_GRACE_MS: '600' });
    const parent = await root(h);
    const [q, a, s] = await Promise.all([
      spawn(h, parent, quick),
      spawn(h, parent, aware),
      spawn(h, parent, stubborn),
    ]);
    await eventually(async () => ((await readLines(started)).length === 2 ? true : undefined), 10_000);

    const closing = performance.now();
    const closed = worker.close().then(() => performance.now() - closing);
    const late = await spawn(h, parent, quick);

    expect((await waitChild(h, parent, q)).status).toBe('exited');
    const cancelled = await waitChild(h, parent, a);
    expect(cancelled).toMatchObject({
      status: 'failed',
      outcome: {
        type: 'failed',
        reason: 'interrupted: the parent closed stdin',
        usage: { prompt_tokens: 1, steps: 1 },
      },
    });
    expect((await waitChild(h, parent, s)).outcome).toMatchObject({
      type: 'failed',
      reason: 'the child did not exit in time without writing a result',
    });
    const took = await closed;
    expect(took).toBeGreaterThanOrEqual(600);
    expect(took).toBeLessThan(600 + 300 + 3_000);
    expect((await view(h, late)).status).toBe('runnable');
  });
});

function shChildPath(name: 'cancel-aware'): string {
  const launch = shChildLaunch(name);
  return launch.args[0] ?? '';
}
