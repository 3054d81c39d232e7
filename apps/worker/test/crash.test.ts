import { type ChildProcess, spawn as spawnProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { launchJobId } from '@libos/protocol';
import { hostPid, SELF_PID } from '@libos/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  completed,
  eventually,
  image,
  isAlive,
  LEASE_MS,
  REQUEST_ID,
  readLines,
  root,
  scratch,
  sh,
  sleep,
  spawn,
  statusIs,
  useHarness,
  view,
  waitChild,
} from './helpers.js';

const h = useHarness();
let files: Awaited<ReturnType<typeof scratch>>;
let doomed: ChildProcess | undefined;

beforeAll(async () => {
  files = await scratch();
});
afterAll(async () => {
  doomed?.kill('SIGKILL');
  await files?.cleanup();
});

/**
 * `src/bin.ts` as its own OS process, from source. Its result dirs go to the scratch dir, so the
 * one a killed worker leaves behind is cleaned up with it.
 */
function startWorkerProcess(env: Record<string, string>): ChildProcess {
  const bin = fileURLToPath(new URL('../src/bin.ts', import.meta.url));
  return spawnProcess(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), '--conditions=@libos/source', bin],
    { env: { ...process.env, TMPDIR: files.dir, ...env }, stdio: ['ignore', 'ignore', 'inherit'] },
  );
}

describe('a worker killed mid-run', () => {
  it('leaves the process running until the reaper pauses it as stale; resume runs it once more elsewhere', async () => {
    const runs = files.file('runs');
    const slow = await image(h, {
      ...sh(
        `umask 0; read -r request; ${REQUEST_ID}; echo "$id" >> "$2"; sleep 1.5; ${completed('"done"')}`,
        runs,
      ),
      pool: 'crash',
    });
    doomed = startWorkerProcess(h.workerEnv({ LIBOS_POOLS: 'crash', LIBOS_WORKER_ID: 'doomed' }));
    const parent = await root(h);
    const child = await spawn(h, parent, slow);
    await eventually(
      async () => ((await readLines(runs)).length === 1 ? true : undefined),
      20_000,
      'the first run',
    );
    expect((await view(h, child)).status).toBe('running');

    doomed.kill('SIGKILL');
    await new Promise((resolve) => doomed?.once('exit', resolve));
    // Nothing but the reaper moves it: still running after its lease has expired.
    await sleep(LEASE_MS + 300);
    expect((await view(h, child)).status).toBe('running');
    expect(await h.kernel.worker.reapExpired()).toEqual([{ pid: child, status: 'paused' }]);
    const stale = await view(h, child);
    expect(stale).toMatchObject({
      status: 'paused',
      pause_reason: 'stale_execution',
      resume_gate: 'host',
      attempt: 1,
    });
    await expect(
      h.kernel.tools.signal_child_process({ pid: parent }, { child_pid: child, signal: 'resume' }),
    ).rejects.toMatchObject({ reason: 'host_gate' });

    // Another worker on the pool: BullMQ's stall check fails the dead worker's job, never re-runs it.
    await h.startWorker({ LIBOS_POOLS: 'crash', LIBOS_WORKER_ID: 'survivor' });
    const job = await h.queue('crash').getJob(launchJobId(child, 1));
    await eventually(
      async () => ((await job?.getState()) === 'failed' ? true : undefined),
      15_000,
      'the stalled job',
    );
    await sleep(300);
    expect(await readLines(runs)).toEqual([`${child}:1`]);
    expect((await view(h, child)).status).toBe('paused');

    await h.kernel.admin.signal(child, { signal: 'resume', reason: 'inspected: safe to run again' });
    const waited = await waitChild(h, parent, child);
    expect(waited).toMatchObject({
      status: 'exited',
      outcome: { type: 'completed', attempt_id: `${child}:2` },
    });
    expect(await readLines(runs)).toEqual([`${child}:1`, `${child}:2`]);
    await statusIs(h, child, 'exited');
  });

  it('a frozen worker cannot keep its child: the watchdog kills it within the lease; its completion is refused', async () => {
    const dir = files.file('frozen-');
    const slow = await image(h, {
      ...sh(`read -r request; echo ${SELF_PID} > "$2pid"; sleep 5`, dir),
      pool: 'frozen',
    });
    const frozen = startWorkerProcess(h.workerEnv({ LIBOS_POOLS: 'frozen', LIBOS_WORKER_ID: 'frozen' }));
    const exited = new Promise<number | null>((resolve) => frozen.once('exit', (code) => resolve(code)));
    try {
      const parent = await root(h);
      const child = await spawn(h, parent, slow);
      const osPid = await eventually(async () => {
        const [line] = await readLines(`${dir}pid`);
        return line === undefined ? undefined : hostPid(line);
      }, 20_000);
      frozen.kill('SIGSTOP');
      const stoppedAt = performance.now();
      // No renewal can be sent now: the watchdog (a process of its own) kills the child in time.
      await eventually(() => (isAlive(osPid) ? undefined : true), 5_000, 'the watchdog to kill the child');
      expect(performance.now() - stoppedAt).toBeLessThan(LEASE_MS);
      await sleep(LEASE_MS + 300);
      expect(await h.kernel.worker.reapExpired()).toEqual([{ pid: child, status: 'paused' }]);
      frozen.kill('SIGCONT');
      // Its next renewal (or its completion) is refused as superseded.
      await sleep(LEASE_MS);
      expect(await view(h, child)).toMatchObject({
        status: 'paused',
        pause_reason: 'stale_execution',
        attempt: 1,
      });
      // SIGTERM: a graceful stop with nothing left to run.
      frozen.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      frozen.kill('SIGKILL');
    }
  });
});
