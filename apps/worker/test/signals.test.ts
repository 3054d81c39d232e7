import { readFile, writeFile } from 'node:fs/promises';
import { shChildLaunch } from '@libos/examples';
import { launchJobId } from '@libos/protocol';
import { hostPid, LAST_JOB_PID, SELF_PID } from '@libos/testkit';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  completed,
  eventually,
  image,
  isAlive,
  procState,
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

// The worker's own environment: a secret and a setting children must not get, and a plain variable.
const ADMIN_SECRET = 'admin-secret-that-children-must-not-see';
process.env.LIBOS_ADMIN_TOKEN = ADMIN_SECRET;
process.env.LIBOS_SOME_SETTING = 'worker only';
process.env.WORKER_VISIBLE = 'inherited';

const h = useHarness();
let files: Awaited<ReturnType<typeof scratch>>;

beforeAll(async () => {
  files = await scratch();
  await h.startWorker();
});
afterAll(() => files?.cleanup());

/** The host pid of what a child wrote to `path` as SELF_PID (first line). */
async function osPid(path: string): Promise<number> {
  return eventually(async () => {
    const [line] = await readLines(path);
    return line === undefined ? undefined : hostPid(line);
  });
}

describe('pause and resume', () => {
  it('stop the child’s process group with its deadline clock, and continue it', async () => {
    const dir = files.file('pause-');
    // 16 ticks of 50 ms (about 1 s of work; more on a loaded host), under a 3 s deadline that a 3.4 s
    // pause would exceed.
    const ticker = await image(h, {
      ...sh(
        `read -r request; ${REQUEST_ID}; echo ${SELF_PID} > "$2pid"; i=0; while [ $i -lt 16 ]; do i=$((i+1)); echo $i >> "$2ticks"; sleep 0.05; done; ${completed('"ticked"')}`,
        dir,
      ),
      deadline_ms: 3_000,
      cancel_grace_ms: 100,
    });
    const parent = await root(h);
    const child = await spawn(h, parent, ticker);
    const pid = await osPid(`${dir}pid`);
    await eventually(async () => ((await readLines(`${dir}ticks`)).length >= 3 ? true : undefined));

    await h.kernel.tools.signal_child_process({ pid: parent }, { child_pid: child, signal: 'pause' });
    expect((await view(h, child)).status).toBe('paused');
    await eventually(() => (procState(pid) === 'T' ? true : undefined), 2_000, 'state T');
    await sleep(100); // a tick in flight when SIGSTOP landed may still append
    const frozen = (await readLines(`${dir}ticks`)).length;
    await sleep(3_400);
    expect(procState(pid)).toBe('T');
    expect((await readLines(`${dir}ticks`)).length).toBe(frozen);
    expect((await view(h, child)).status).toBe('paused');

    await h.kernel.tools.signal_child_process({ pid: parent }, { child_pid: child, signal: 'resume' });
    await eventually(() => (procState(pid) !== 'T' ? true : undefined), 2_000, 'continued');
    const waited = await waitChild(h, parent, child);
    expect(waited).toMatchObject({ status: 'exited', outcome: { type: 'completed' } });
    expect(await readLines(`${dir}ticks`)).toHaveLength(16);
    // the measured wall time leaves the pause out
    expect(waited.outcome?.usage?.wall_ms).toBeLessThan(3_000);
  });
});

describe('cancel', () => {
  it('closes stdin: a cancel-aware child reports, the process is killed with its usage kept', async () => {
    const aware = await image(h, { ...shChildLaunch('cancel-aware'), cancel_grace_ms: 2_000 });
    const parent = await root(h);
    const child = await spawn(h, parent, aware);
    await statusIs(h, child, 'running');
    await sleep(100); // let it read its request
    const started = performance.now();
    await h.kernel.tools.signal_child_process(
      { pid: parent },
      { child_pid: child, signal: 'cancel', reason: 'enough' },
    );
    const waited = await waitChild(h, parent, child);
    expect(performance.now() - started).toBeLessThan(1_500); // it did not need the grace
    expect(waited).toMatchObject({
      status: 'killed',
      result_oid: null,
      outcome: {
        type: 'killed',
        reason: 'enough',
        attempt_id: `${child}:1`,
        usage: { prompt_tokens: 1, completion_tokens: 0, steps: 1 },
      },
    });
    // on Bull Board the killed process is a failed job with the kill's reason
    const id = launchJobId(child, 1);
    await eventually(async () => ((await h.queue().getJobState(id)) === 'failed' ? true : undefined));
    const job = await h.queue().getJob(id);
    expect(job?.failedReason).toBe(`${child} killed (killed: enough)`);
    expect(job?.progress).toMatchObject({ pid: child, status: 'killed', outcome: { type: 'killed' } });
  });

  it('kills a child that ignores stdin EOF after the image’s grace, and a paused one too', async () => {
    const dir = files.file('stubborn-');
    const stubborn = await image(h, {
      // umask 0: both children append to one file, and each runs as a uid of its own.
      ...sh(
        `umask 0; read -r request; echo ${SELF_PID} >> "$2pids"; sleep 30 & echo ${LAST_JOB_PID} >> "$2pids"; wait`,
        dir,
      ),
      cancel_grace_ms: 400,
    });
    const parent = await root(h);
    const running = await spawn(h, parent, stubborn);
    const paused = await spawn(h, parent, stubborn);
    const pids = await eventually(async () => {
      const found = (await readLines(`${dir}pids`)).map(hostPid);
      return found.length === 4 && found.every((pid) => pid !== undefined) ? (found as number[]) : undefined;
    });
    await h.kernel.admin.signal(paused, { signal: 'pause' });
    await eventually(() => (pids.filter((pid) => procState(pid) === 'T').length === 2 ? true : undefined));
    const started = performance.now();
    await h.kernel.admin.signal(running, { signal: 'cancel' });
    await h.kernel.admin.signal(paused, { signal: 'cancel' });
    for (const pid of [running, paused]) {
      const waited = await waitChild(h, parent, pid);
      expect(waited).toMatchObject({ status: 'killed', outcome: { type: 'killed', reason: 'cancel' } });
    }
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(400);
    expect(elapsed).toBeLessThan(3_000);
    expect(await eventually(() => (pids.every((pid) => !isAlive(pid)) ? true : undefined), 2_000)).toBe(true);
  });
});

describe('terminate', () => {
  it('kills the whole group at once, grandchildren too', async () => {
    const pidFile = files.file('grandchildren');
    const family = await image(h, {
      ...shChildLaunch('spawns-grandchildren', pidFile),
      cancel_grace_ms: 5_000,
    });
    const parent = await root(h);
    const child = await spawn(h, parent, family);
    const pids = await eventually(async () => {
      const lines = (await readLines(pidFile)).map(hostPid);
      return lines.length === 3 && lines.every((pid) => pid !== undefined) ? (lines as number[]) : undefined;
    });
    expect(pids.every(isAlive)).toBe(true);
    const started = performance.now();
    await h.kernel.tools.signal_child_process({ pid: parent }, { child_pid: child, signal: 'terminate' });
    const waited = await waitChild(h, parent, child);
    expect(performance.now() - started).toBeLessThan(2_000); // far below the 5 s grace
    expect(waited).toMatchObject({ status: 'killed', outcome: { type: 'killed', reason: 'terminate' } });
    expect(await eventually(() => (pids.every((pid) => !isAlive(pid)) ? true : undefined), 1_000)).toBe(true);
  });
});

describe('the child’s environment and token', () => {
  it('has its own LIBOS_URL, LIBOS_PID and LIBOS_TOKEN, which no image overrides, and no worker secret', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'debug', base: null }, { write: (line: string) => void lines.push(line) });
    await h.startWorker({ LIBOS_POOLS: 'logged' }, logger);
    const dir = files.file('env-');
    // However the test ends, let the child finish: a child left waiting would outlive the run.
    onTestFinished(() => writeFile(`${dir}go`, '').catch(() => undefined));
    const holder = await image(h, {
      ...sh(
        `read -r request; ${REQUEST_ID}; env > "$2env.tmp"; mv "$2env.tmp" "$2env"; while [ ! -e "$2go" ]; do sleep 0.02; done; ${completed('"done"')}`,
        dir,
      ),
      env: {
        LIBOS_URL: 'http://forged.example',
        LIBOS_PID: 'pforged00000',
        LIBOS_TOKEN: 'forged.token',
        IMAGE_SETTING: 'from the image',
      },
      pool: 'logged',
    });
    const parent = await root(h);
    const child = await spawn(h, parent, holder);
    const text = await eventually(() => readFile(`${dir}env`, 'utf8').catch(() => undefined));
    const env = new Map(
      text
        .split('\n')
        .filter((line) => line.includes('='))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    expect(env.get('LIBOS_URL')).toBe('http://127.0.0.1:7070');
    expect(env.get('LIBOS_PID')).toBe(child);
    expect(env.get('IMAGE_SETTING')).toBe('from the image');
    expect(env.get('WORKER_VISIBLE')).toBe('inherited');
    expect([...env.keys()].filter((name) => name.startsWith('LIBOS_')).sort()).toEqual([
      'LIBOS_PID',
      'LIBOS_TOKEN',
      'LIBOS_URL',
    ]);
    expect(text).not.toContain(ADMIN_SECRET);
    const token = env.get('LIBOS_TOKEN') ?? '';
    expect(token.startsWith(`${child}.`)).toBe(true);
    expect(await h.kernel.authenticate(token)).toMatchObject({ pid: child });
    expect((await view(h, child)).status).toBe('running');
    await writeFile(`${dir}go`, '');
    expect((await waitChild(h, parent, child)).status).toBe('exited');
    await expect(h.kernel.authenticate(token)).rejects.toMatchObject({ code: 'unauthenticated' });

    // Logs: every line about the launch names its pid and attempt; none holds the token.
    const secret = token.slice(token.lastIndexOf('.') + 1);
    const about = lines.filter((line) => line.includes(child));
    expect(about.length).toBeGreaterThanOrEqual(4);
    for (const line of about) expect(JSON.parse(line)).toMatchObject({ pid: child, attempt: 1 });
    expect(lines.some((line) => line.includes(secret))).toBe(false);
  });
});
