// A spawner's result directories live in a home of its own, locked (flock) while it lives, so a
// spawner killed without its ending leaves nothing behind for long: the next spawner to use the
// parent removes every home whose lock it can take. Real locks, held by real processes.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RESULT_HOME_PREFIX, ResultHomes, Spawner } from '../src/index.js';

const work = mkdtempSync(join(tmpdir(), 'result-homes-test-'));
const holders: ChildProcess[] = [];
afterAll(() => {
  for (const holder of holders) holder.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

/** Whether another process could take `lock` now (util-linux flock, non-blocking). */
function free(lock: string): boolean {
  return spawnSync('flock', ['--nonblock', lock, 'true']).status === 0;
}

/** A home as a spawner leaves it: the lock file and a launch's directory with its result. */
function leftHome(parent: string, name: string): string {
  const home = join(parent, `${RESULT_HOME_PREFIX}${name}`);
  mkdirSync(join(home, 'workflow-result-x'), { recursive: true });
  writeFileSync(join(home, '.lock'), '');
  writeFileSync(join(home, 'workflow-result-x', 'result.json'), '{}');
  return home;
}

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('result homes', () => {
  it('one per parent, searchable but not listable, locked while it lives, removed by close', () => {
    const parent = mkdtempSync(join(work, 'parent-'));
    const homes = new ResultHomes();
    const home = homes.homeIn(parent) ?? '';
    expect(home.startsWith(join(parent, RESULT_HOME_PREFIX))).toBe(true);
    expect(homes.homeIn(parent)).toBe(home);
    expect(statSync(home).mode & 0o777).toBe(0o711);
    expect(free(join(home, '.lock'))).toBe(false);
    homes.close();
    expect(existsSync(home)).toBe(false);
    expect(readdirSync(parent)).toEqual([]);
  });

  it('a parent where none can be made has none', () => {
    const homes = new ResultHomes();
    expect(homes.homeIn(join(work, 'no-such-parent'))).toBeUndefined();
    homes.close();
  });

  it('the first use of a parent removes the homes of gone spawners, and only those', async () => {
    const parent = mkdtempSync(join(work, 'parent-'));
    const dead = leftHome(parent, 'dead');
    const live = leftHome(parent, 'live');
    const holder = spawn('flock', ['--no-fork', join(live, '.lock'), 'sleep', '60'], { stdio: 'ignore' });
    holders.push(holder);
    await until(() => !free(join(live, '.lock')), 'the live home to be locked');
    // Being made right now (no lock yet), and one left half made a while ago.
    const making = join(parent, `${RESULT_HOME_PREFIX}making`);
    const halfMade = join(parent, `${RESULT_HOME_PREFIX}half`);
    mkdirSync(making);
    mkdirSync(halfMade);
    const past = new Date(Date.now() - 120_000);
    utimesSync(halfMade, past, past);
    // Not a home of this uid's: a link to elsewhere, with a lock anyone could take.
    const elsewhere = leftHome(work, 'elsewhere');
    const link = join(parent, `${RESULT_HOME_PREFIX}link`);
    symlinkSync(elsewhere, link);
    writeFileSync(join(parent, 'unrelated'), 'kept');

    const homes = new ResultHomes();
    const own = homes.homeIn(parent) ?? '';
    await homes.swept();
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(halfMade)).toBe(false);
    expect(existsSync(join(live, 'workflow-result-x', 'result.json'))).toBe(true);
    expect(existsSync(making)).toBe(true);
    expect(existsSync(join(elsewhere, 'workflow-result-x', 'result.json'))).toBe(true);
    expect(readdirSync(parent).sort()).toEqual(
      [own, live, making, link]
        .map((path) => path.slice(parent.length + 1))
        .concat('unrelated')
        .sort(),
    );
    homes.close();
    holder.kill('SIGKILL');
  });

  it('a spawner killed mid-launch leaves its home; the next spawner to launch into the parent removes it', async () => {
    const parent = mkdtempSync(join(work, 'parent-'));
    const spawner = await Spawner.start(
      {
        mode: 'none',
        uids: { first: 31_300, last: 31_309 },
        lockDir: join(work, '.locks'),
        runtime: [],
        hide: [],
        cgroupName: 'libos-result-homes-test',
        bwrap: 'bwrap',
        prlimit: '/usr/bin/prlimit',
      },
      process.env,
    );
    const launch = (script: string, onSpawn?: (control: { pid: number }) => void) =>
      spawner.run({
        command: 'sh',
        args: ['-c', `read -r request; ${script}`, 'sh', '{result_file}'],
        input: {},
        kind: 'k',
        id: 't',
        deadlineMs: 20_000,
        resultParent: parent,
        ...(onSpawn ? { onSpawn } : {}),
      });
    let child: number | undefined;
    try {
      const blocked = launch('sleep 30', (control) => {
        child = control.pid;
      });
      await until(() => child !== undefined, 'the launch to start');
      const [left] = readdirSync(parent);
      expect(left).toMatch(new RegExp(`^${RESULT_HOME_PREFIX}`));
      expect(readdirSync(join(parent, left!))).toEqual(expect.arrayContaining(['.lock']));
      expect(readdirSync(join(parent, left!)).some((name) => name.startsWith('workflow-result-'))).toBe(true);
      process.kill(spawner.pid!, 'SIGKILL'); // no ending: the home stays, its lock free
      expect((await blocked).terminal.type).toBe('failed');
      expect(existsSync(join(parent, left!))).toBe(true);
      // The spawner started again; its first launch into the parent sweeps it.
      const next = await launch(
        `printf '{"version":1,"request_id":"t","status":"completed","output":1}' > "$1"`,
      );
      expect(next.terminal.type).toBe('captured');
      await until(() => !existsSync(join(parent, left!)), 'the killed spawner’s home to go');
      expect(readdirSync(parent)).toHaveLength(1); // the new spawner's own
    } finally {
      try {
        if (child !== undefined) process.kill(-child, 'SIGKILL'); // its group: sh and its sleep
      } catch {}
      await spawner.close();
    }
    expect(readdirSync(parent)).toEqual([]); // removed by its ending
  });
});
