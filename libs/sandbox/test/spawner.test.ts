// The spawner with a real sandbox (root, bubblewrap, cgroups: what CI has): launches run in its
// process, the watchdog it holds fences them by the beats the caller sends, and neither its
// death nor its close leaves a child behind.
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LaunchControl } from '@libos/runner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, monotonicMs, processesOfUid, Spawner } from '../src/index.js';

const work = mkdtempSync(join(tmpdir(), 'spawner-test-'));
chmodSync(work, 0o777);
const locks = join(work, '.locks');
const settings = {
  mode: 'strict' as const,
  uids: { first: 31_200, last: 31_299 },
  lockDir: locks,
  runtime: [],
  hide: [locks],
  cgroupName: 'libos-spawner-test',
  bwrap: 'bwrap',
  prlimit: '/usr/bin/prlimit',
};
const fired: string[] = [];
let spawner: Spawner;
beforeAll(async () => {
  spawner = await Spawner.start(settings, process.env, { onFired: (firing) => fired.push(firing.id) });
});
afterAll(async () => {
  await spawner.close();
  rmSync(work, { recursive: true, force: true });
});

function launch(
  script: string,
  fence?: { id: string; deadline: number },
  onSpawn?: (c: LaunchControl) => void,
  more: { resultParent?: string } = {},
) {
  return spawner.run({
    ...more,
    command: 'sh',
    args: ['-c', `read -r request; ${script}`, 'sh', '{result_file}'],
    input: {},
    kind: 'k',
    id: 't',
    deadlineMs: 20_000,
    cancelGraceMs: 200,
    confine: { cwd: work, paths: [], runtime: [], limits: DEFAULT_LIMITS, network: 'host' },
    fence,
    onSpawn,
  });
}

const RESULT = `printf '{"version":1,"request_id":"t","status":"completed","output":"%s"}' "$out" > "$1"`;

describe('a launch through the spawner', () => {
  it('runs in its sandbox, as a uid of its own, and says strict', async () => {
    expect(spawner.describe()).toMatch(/^isolation strict: /);
    const result = await launch(`out="$(id -u) $(ls /proc | grep -c '^[0-9]')"; ${RESULT}`);
    expect(result.terminal.type).toBe('captured');
    const [uid, processes] = String(result.report).split(' ');
    expect(Number(uid)).toBeGreaterThanOrEqual(31_200);
    expect(Number(uid)).toBeLessThanOrEqual(31_299);
    // bwrap's init, sh, and the command substitution's processes: nothing of the host.
    expect(Number(processes)).toBeLessThan(6);
  });

  it('a result directory in memory (/dev/shm, as workers make them): the child writes there and sees nothing else of it', async () => {
    // Another launch's directory beside it, as on a busy worker.
    const sibling = mkdtempSync('/dev/shm/workflow-result-');
    writeFileSync(join(sibling, 'result.json'), 'not yours');
    try {
      const homeOfChild = '$(dirname "$(dirname "$1")")';
      const result = await launch(
        `out="$1 $(ls -A /dev/shm | tr '\\n' ,) $(ls -A ${homeOfChild} | tr '\\n' ,)"; ${RESULT}`,
        undefined,
        undefined,
        { resultParent: '/dev/shm' },
      );
      expect(result.terminal.type).toBe('captured');
      const [path, inShm, inHome] = String(result.report).split(' ');
      // In the spawner's home there (see ResultHomes): the home and its own directory, nothing else.
      const [, home, own] =
        /^\/dev\/shm\/(libos-spawner-[^/]+)\/(workflow-result-[^/]+)\/result\.json$/.exec(path ?? '') ?? [];
      expect(own).toBeDefined();
      expect(inShm).toBe(`${home},`);
      expect(inHome).toBe(`${own},`);
      expect(existsSync(join('/dev/shm', home!, own!))).toBe(false); // removed after the launch
    } finally {
      rmSync(sibling, { recursive: true, force: true });
    }
  });

  it('a launch whose fence passes without a beat is killed by the watchdog; a beaten one runs on', async () => {
    let latePid: number | undefined;
    const late = launch('sleep 30', { id: 'late', deadline: monotonicMs() + 400 }, (control) => {
      latePid = control.pid;
    });
    const kept = launch(`sleep 1; out=kept; ${RESULT}`, { id: 'kept', deadline: monotonicMs() + 400 });
    const beat = setInterval(() => spawner.beat('kept', monotonicMs() + 400), 100);
    const [lateResult, keptResult] = await Promise.all([late, kept]);
    clearInterval(beat);
    expect(latePid).toBeDefined();
    expect(fired).toEqual(['late']);
    expect(lateResult.terminal.type).not.toBe('captured');
    expect(keptResult.report).toBe('kept');
  });

  it('a launch whose fence passed before it could start runs nothing; a beat sent meanwhile counts', async () => {
    let spawned = false;
    const late = await launch(`out=ran; ${RESULT}`, { id: 'stale', deadline: monotonicMs() - 1 }, () => {
      spawned = true;
    });
    expect(late.terminal).toMatchObject({ type: 'failed', reason: expect.stringContaining('fence passed') });
    expect(spawned).toBe(false);
    // A renewal that reached the spawner before its launch did moves the first deadline.
    spawner.beat('renewed', monotonicMs() + 5_000);
    const renewed = await launch(`out=ran; ${RESULT}`, { id: 'renewed', deadline: monotonicMs() - 1 });
    expect(renewed.report).toBe('ran');
  });

  it('beats reach the watchdog directly: a stopped spawner does not hold them back', async () => {
    let pid: number | undefined;
    const kept = launch(
      `sleep 1.5; out=kept; ${RESULT}`,
      { id: 'direct', deadline: monotonicMs() + 400 },
      (c) => {
        pid = c.pid;
      },
    );
    await eventually(() => pid !== undefined);
    const beat = setInterval(() => spawner.beat('direct', monotonicMs() + 400), 100);
    process.kill(spawner.pid ?? 0, 'SIGSTOP');
    await new Promise((resolve) => setTimeout(resolve, 2_500)); // past the first deadline
    process.kill(spawner.pid ?? 0, 'SIGCONT');
    const result = await kept;
    clearInterval(beat);
    expect(fired).not.toContain('direct');
    expect(result.report).toBe('kept');
  });

  it('a spawner signalled to terminate (a service manager stopping the whole group) lets its launches finish', async () => {
    let control: LaunchControl | undefined;
    const running = launch(`sleep 0.5; out=finished; ${RESULT}`, undefined, (c) => {
      control = c;
    });
    await eventually(() => control !== undefined);
    const pid = spawner.pid ?? 0;
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.kill(pid, signal);
    expect((await running).report).toBe('finished');
    expect(spawner.pid).toBe(pid); // the same spawner, not one started in its place
  });

  it('a spawner that dies takes its children with it; their launches fail and another starts', async () => {
    let control: LaunchControl | undefined;
    const running = launch('sleep 30', undefined, (c) => {
      control = c;
    });
    await eventually(() => control !== undefined);
    const uids = new Set<number>();
    for (let uid = 31_200; uid <= 31_299; uid++) if (processesOfUid(uid).length > 0) uids.add(uid);
    expect(uids.size).toBe(1);
    process.kill(spawner.pid ?? 0, 'SIGKILL');
    const result = await running;
    expect(result.terminal).toMatchObject({
      type: 'failed',
      reason: expect.stringContaining('spawner exited'),
    });
    const [uid] = [...uids];
    await eventually(() => processesOfUid(uid ?? 0).length === 0);
    // The next launch runs in the spawner started in its place.
    expect((await launch(`out=again; ${RESULT}`)).report).toBe('again');
  });

  it('closing the spawner kills the launches still running', async () => {
    const own = await Spawner.start({ ...settings, uids: { first: 31_300, last: 31_309 } }, process.env);
    let pid: number | undefined;
    const running = own.run({
      command: 'sh',
      args: ['-c', 'read -r r; sleep 30', 'sh', '{result_file}'],
      input: {},
      kind: 'k',
      id: 't',
      confine: { cwd: work, paths: [], runtime: [], limits: DEFAULT_LIMITS, network: 'host' },
      onSpawn: (c) => {
        pid = c.pid;
      },
    });
    await eventually(() => pid !== undefined);
    // The spawn is reported when bubblewrap starts; the child takes its uid a moment later.
    const uidOfChild = () =>
      [...Array(10).keys()].map((i) => 31_300 + i).find((u) => processesOfUid(u).length > 0);
    await eventually(() => uidOfChild() !== undefined);
    const uid = uidOfChild();
    expect(uid).toBeDefined();
    await own.close();
    expect((await running).terminal.type).toBe('failed');
    await eventually(() => processesOfUid(uid ?? 0).length === 0);
  });
});

async function eventually(check: () => boolean, withinMs = 10_000): Promise<void> {
  const until = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
