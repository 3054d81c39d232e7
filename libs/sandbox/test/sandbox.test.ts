import { execFile, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { contractRun } from '@libos/runner';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, type Mount, monotonicMs, processesOfUid, Sandbox, Watchdog } from '../src/index.js';

const work = mkdtempSync(join(tmpdir(), 'sandbox-test-'));
chmodSync(work, 0o777);
const locks = join(work, '.locks');
const sandbox = Sandbox.create({
  mode: 'auto',
  uids: { first: 31_000, last: 31_099 },
  lockDir: locks,
  runtime: [],
  hide: [locks],
  cgroupName: 'libos-sandbox-test',
  bwrap: 'bwrap',
  prlimit: '/usr/bin/prlimit',
});
afterAll(() => {
  sandbox.close();
  rmSync(work, { recursive: true, force: true });
});

const RESULT = `printf '{"version":1,"request_id":"t","status":"completed","output":"%s"}' "$out" > "$1"`;

function run(
  script: string,
  limits = DEFAULT_LIMITS,
  more: Partial<Parameters<typeof contractRun>[0]> = {},
  paths: Mount[] = [],
) {
  const confinement = sandbox.confine({ cwd: work, paths, runtime: [], limits, network: 'host' });
  return {
    uid: confinement.uid,
    done: contractRun({
      command: 'sh',
      args: ['-c', `read -r request; ${script}`, 'sh', '{result_file}'],
      input: {},
      kind: 'k',
      id: 't',
      deadlineMs: 10_000,
      cancelGraceMs: 200,
      confinement,
      ...more,
    }),
  };
}

// These need what CI has: root, bubblewrap and writable cgroups (the last test names what is missing).
describe('a sandboxed launch', () => {
  it('runs as a uid of its own, sees only its own processes and its view of the host', async () => {
    writeFileSync(join(work, 'secret'), 'x');
    chmodSync(join(work, 'secret'), 0o600);
    const { uid, done } = run(
      `out="$(id -u) $(ls /proc | grep -c '^[0-9]') $(cat secret 2>&1 | head -c 40) $(ls ${locks} 2>&1 | head -c 20) $(touch /usr/x 2>&1 | head -c 5)"; ${RESULT}`,
    );
    const result = await done;
    expect(result.terminal).toEqual({ type: 'captured' });
    const [ownUid, processes, ...rest] = String(result.report).split(' ');
    expect(Number(ownUid)).toBe(uid);
    // the sandbox's init, sh, its command substitutions: not the host's hundreds
    expect(Number(processes)).toBeLessThanOrEqual(8);
    expect(rest.join(' ')).toMatch(
      /^cat: can't open 'secret': Permission denied|^cat: secret: Permission denied/,
    );
    expect(rest.join(' ')).not.toContain('31');
  });

  it('runs with no supplementary groups, no capabilities and no_new_privs (no exec can gain any)', async () => {
    const { uid, done } = run(
      `out="$(grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs):' /proc/self/status | tr -s '\\t ' ' ' | tr '\\n' ';')"; ${RESULT}`,
    );
    const result = await done;
    expect(result.terminal).toEqual({ type: 'captured' });
    expect(String(result.report)).toBe(
      `Uid: ${uid} ${uid} ${uid} ${uid};Gid: ${uid} ${uid} ${uid} ${uid};Groups: ;` +
        'CapInh: 0000000000000000;CapPrm: 0000000000000000;CapEff: 0000000000000000;' +
        'CapAmb: 0000000000000000;NoNewPrivs: 1;',
    );
  });

  it("cannot use the kernel keyring, which outlives a uid's sandbox for the next launch of that uid", async () => {
    // add_key to the uid's user keyring (KEY_SPEC_USER_KEYRING, -4) and keyctl's GET_KEYRING_ID
    // of it, through perl (Debian's perl-base is always there): each call's result and errno.
    const [addKey, keyctl] = { x64: [248, 250], arm64: [217, 219] }[process.arch as 'x64' | 'arm64'] ?? [];
    const perl = `my ($t, $d, $v) = ("user", "planted", "secret"); for my $r (syscall(${addKey}, $t, $d, $v, 6, -4), syscall(${keyctl}, 0, -4, 0)) { print $r < 0 ? "refused:" . ($! + 0) . " " : "ran "; }`;
    const { done } = run(`out="$(perl -e '${perl}' 2>&1) $(id -u)"; ${RESULT}`);
    const result = await done;
    expect(result.terminal).toEqual({ type: 'captured' });
    // EPERM (1) for both; everything else runs (perl, id).
    expect(String(result.report)).toMatch(/^refused:1 refused:1 +\d+$/);
    expect(sandbox.report.seccomp).toBe(true);
    expect(sandbox.describe()).toContain('no keyring calls (seccomp)');
  });

  it("runs in a cpu cgroup of the sandbox's own, every process of it", async () => {
    const own = /^\d+:(?:[\w,]*,)?cpu(?:,[\w,]*)?:(.*)$/m.exec(
      readFileSync('/proc/self/cgroup', 'utf8'),
    )?.[1];
    const { uid, done } = run(
      `sleep 30 & sleep 30 & touch ready-$$; while [ ! -e go-cpu ]; do sleep 0.05; done; kill %1 %2; out=ok; ${RESULT}`,
    );
    await eventually(() => readdirSync(work).some((name) => name.startsWith('ready-')));
    const procs = readFileSync(
      join('/sys/fs/cgroup/cpu', own ?? '/', 'libos-sandbox-test', `u${uid}`, 'cgroup.procs'),
      'utf8',
    )
      .split('\n')
      .filter(Boolean);
    // bwrap's init, sh and its two sleeps (and the loop's sleep, when caught)
    expect(procs.length).toBeGreaterThanOrEqual(4);
    writeFileSync(join(work, 'go-cpu'), '');
    expect((await done).terminal).toEqual({ type: 'captured' });
    expect(sandbox.report.cgroupCpu).toBe(true);
  });

  it('a program found on PATH is looked for again when it stops being there: another one found, or none', async () => {
    const [bin, later] = [join(work, 'bin'), join(work, 'later')];
    for (const dir of [bin, later]) mkdirSync(dir, { recursive: true });
    // The program says which directory it ran from.
    const script = `#!/bin/sh\nread -r request; out=$(basename "$(dirname "$0")"); ${RESULT}\n`;
    writeFileSync(join(bin, 'libos-found'), script, { mode: 0o755 });
    const launch = async () => {
      const result = await contractRun({
        command: 'libos-found',
        args: ['{result_file}'],
        input: {},
        kind: 'k',
        id: 't',
        deadlineMs: 10_000,
        env: { PATH: `${bin}:${later}:/usr/bin:/bin` },
        confinement: sandbox.confine({
          cwd: work,
          paths: [],
          runtime: [],
          limits: DEFAULT_LIMITS,
          network: 'host',
        }),
      });
      return result.terminal.type === 'captured' ? result.report : result.terminal;
    };
    expect(await launch()).toBe('bin');
    // Its directory replaced by a file (the one found before is then not even reachable).
    writeFileSync(join(later, 'libos-found'), script, { mode: 0o755 });
    rmSync(bin, { recursive: true });
    writeFileSync(bin, 'not a directory');
    expect(await launch()).toBe('later');
    // No longer executable, and nothing else on PATH.
    chmodSync(join(later, 'libos-found'), 0o644);
    expect(await launch()).toEqual({
      type: 'failed',
      reason: 'child spawn failed: spawn libos-found ENOENT',
    });
  });

  it('a fork bomb stops at the pids limit; the processes die with the launch', async () => {
    // The bomb runs in a subshell (dash exits when a fork fails); the count is read with builtins
    // only, since no fork is left while its processes live.
    const { uid, done } = run(
      '(i=0; while [ $i -lt 200 ]; do sleep 5 & echo $! >> /tmp/pids; i=$((i+1)); done) 2>/dev/null; out=0; while read -r _; do out=$((out+1)); done < /tmp/pids; ' +
        RESULT,
      { ...DEFAULT_LIMITS, pids: 16 },
    );
    const result = await done;
    expect(result.terminal).toEqual({ type: 'captured' });
    expect(Number(result.report)).toBeLessThan(16);
    expect(Number(result.report)).toBeGreaterThan(5);
    await eventually(() => processesOfUid(uid!).length === 0);
  });

  it("every process of the sandbox has the image's rlimits, set on its init at the handshake", async () => {
    const limits = { ...DEFAULT_LIMITS, openFiles: 100, fileSizeMb: 3, pids: 40, cpuMs: 2_500 };
    // What a process the child starts has (grep's own limits).
    const { done } = run(
      `out="$(grep -E 'cpu time|file size|processes|open files' /proc/self/limits | tr -s ' ' | tr '\\n' ';')"; ${RESULT}`,
      limits,
    );
    const result = await done;
    expect(result.terminal).toEqual({ type: 'captured' });
    const report = String(result.report);
    expect(report).toContain('Max cpu time 3 3 seconds');
    expect(report).toContain(`Max file size ${3 * 1024 * 1024} ${3 * 1024 * 1024} bytes`);
    expect(report).toContain('Max processes 42 42 processes'); // pids + bwrap's two
    expect(report).toContain('Max open files 100 100 files');
    expect(sandbox.rlimitsAtHandshake).toBe(true); // not prlimit(1): this host has bwrap and koffi
  });

  it('an rlimit above what the worker may give fails the launch, saying so', async () => {
    // The worker runs with a hard limit of 2,000 open files; the image asks 3,000. Root without
    // CAP_SYS_RESOURCE (a container's default, and this host's) cannot raise it.
    const fixture = fileURLToPath(new URL('./fixtures/limits-worker.ts', import.meta.url));
    const worker = [
      '--import',
      'tsx',
      '--conditions=@libos/source',
      fixture,
      join(work, '.limit-locks'),
      work,
    ];
    const run = async (openFiles: number) => {
      const dropped = ['setpriv', '--inh-caps=-sys_resource', '--bounding-set=-sys_resource', '--'];
      const argv = ['--nofile=2000:2000', '--', ...dropped, process.execPath, ...worker, String(openFiles)];
      const { stdout } = await promisify(execFile)('prlimit', argv, { encoding: 'utf8', timeout: 30_000 });
      return JSON.parse(stdout) as unknown;
    };
    expect(await run(3_000)).toEqual({
      type: 'failed',
      reason:
        "child spawn failed: the sandbox's rlimit nofile=3000 cannot be set (EPERM: above the hard limit this worker may give, or not permitted)",
    });
    expect(await run(2_000)).toEqual({ type: 'captured' });
  }, 60_000);

  it('an image allowing few open files still gets a sandbox with many paths (its rlimits after bwrap)', async () => {
    // Set at the handshake, 16 open files would hold bwrap's own set-up of 14 pinned paths.
    const paths = Array.from({ length: 12 }, (_, i) => {
      const path = join(work, `shown-${i}`);
      mkdirSync(path, { recursive: true });
      return { path, access: 'read' as const };
    });
    const { done } = run(
      `out="$(grep 'open files' /proc/self/limits | tr -s ' ')"; ${RESULT}`,
      { ...DEFAULT_LIMITS, openFiles: 16 },
      {},
      paths,
    );
    const result = await done;
    expect(result.terminal).toEqual({ type: 'captured' });
    expect(String(result.report)).toContain('Max open files 16 16 files');
  });

  it('pause stops every process of the sandbox, resume continues them', async () => {
    const confinement = sandbox.confine({
      cwd: work,
      paths: [],
      runtime: [],
      limits: DEFAULT_LIMITS,
      network: 'host',
    });
    let control: Parameters<NonNullable<Parameters<typeof contractRun>[0]['onSpawn']>>[0] | undefined;
    const done = contractRun({
      command: 'sh',
      args: ['-c', 'read -r request; sleep 30 & sleep 30 & wait', 'sh', '{result_file}'],
      input: {},
      kind: 'k',
      id: 't',
      deadlineMs: 10_000,
      cancelGraceMs: 100,
      confinement,
      onSpawn: (c) => {
        control = c;
      },
    });
    const uid = confinement.uid!;
    const state = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    await eventually(() => processesOfUid(uid).length >= 3); // sh and its two sleeps
    control!.pause();
    await eventually(() => processesOfUid(uid).every((pid) => state(pid) === 'T'));
    control!.resume();
    await eventually(() => processesOfUid(uid).every((pid) => state(pid) !== 'T'));
    control!.signal('SIGKILL');
    expect((await done).terminal.type).toBe('failed');
    await eventually(() => processesOfUid(uid).length === 0);
  });
});

describe('the watchdog', () => {
  it('kills an armed process group once its deadline passes without a beat, and keeps a beaten one', async () => {
    const fired: string[] = [];
    const watchdog = new Watchdog((firing) => fired.push(firing.id));
    const late = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const kept = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    watchdog.arm('late', monotonicMs() + 300, { pgid: late.pid });
    watchdog.arm('kept', monotonicMs() + 300, { pgid: kept.pid });
    const beat = setInterval(() => watchdog.beat('kept', monotonicMs() + 300), 100);
    await new Promise((resolve) => late.once('exit', resolve));
    await eventually(() => fired.length > 0);
    expect(fired).toEqual(['late']);
    expect(kept.exitCode).toBeNull();
    clearInterval(beat);
    watchdog.disarm('kept');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(kept.exitCode).toBeNull();
    // Closing it kills what is still armed: a worker that goes takes its children.
    watchdog.arm('kept', monotonicMs() + 60_000, { pgid: kept.pid });
    const keptExit = new Promise((resolve) => kept.once('exit', resolve));
    await watchdog.close();
    await keptExit;
    expect(kept.signalCode).toBe('SIGKILL');
  });

  it('arms a launch with neither uid nor group once its group is known, and kills it at its deadline', async () => {
    const fired: string[] = [];
    const watchdog = new Watchdog((firing) => fired.push(firing.id));
    const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    watchdog.arm('unconfined', monotonicMs() + 300, {});
    watchdog.beat('unconfined', monotonicMs() + 400); // the latest deadline goes with the group
    watchdog.target('unconfined', child.pid!);
    await exited;
    expect(child.signalCode).toBe('SIGKILL');
    await eventually(() => fired.length > 0);
    expect(fired).toEqual(['unconfined']);
    await watchdog.close();
  });

  it('gets a disarm queued in the same turn as its close: what was disarmed is not killed at the EOF', async () => {
    const watchdog = new Watchdog();
    const done = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const armed = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    watchdog.arm('done', monotonicMs() + 60_000, { pgid: done.pid });
    watchdog.arm('armed', monotonicMs() + 60_000, { pgid: armed.pid });
    // Its lines of one turn are written together, after the turn; the close must not lose them.
    watchdog.disarm('done');
    const armedExit = new Promise((resolve) => armed.once('exit', resolve));
    await watchdog.close();
    await armedExit;
    expect(armed.signalCode).toBe('SIGKILL');
    // Both would be killed in one pass; the other's exit would be seen by now.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(done.exitCode).toBeNull();
    expect(done.signalCode).toBeNull();
    done.kill('SIGKILL');
  });

  it('wakes for a deadline armed before the one it waits for, and for a beaten one once the beats stop', async () => {
    const fired: string[] = [];
    const watchdog = new Watchdog((firing) => fired.push(firing.id));
    const far = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const near = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const beaten = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    // Its one timer is set for `far` first; `near`, armed after, must not wait for it.
    watchdog.arm('far', monotonicMs() + 60_000, { pgid: far.pid });
    watchdog.arm('near', monotonicMs() + 300, { pgid: near.pid });
    watchdog.arm('beaten', monotonicMs() + 300, { pgid: beaten.pid });
    const beat = setInterval(() => watchdog.beat('beaten', monotonicMs() + 300), 100);
    await new Promise((resolve) => near.once('exit', resolve));
    // the watchdog kills first and reports after: its line can come after the exit is seen here
    await eventually(() => fired.length >= 1);
    expect(fired).toEqual(['near']);
    expect(beaten.exitCode).toBeNull();
    // The beats stop: the deadline it was last given passes.
    clearInterval(beat);
    const stoppedAt = monotonicMs();
    await new Promise((resolve) => beaten.once('exit', resolve));
    expect(beaten.signalCode).toBe('SIGKILL');
    expect(monotonicMs() - stoppedAt).toBeLessThan(5_000);
    await eventually(() => fired.length === 2);
    expect(fired).toEqual(['near', 'beaten']);
    expect(far.exitCode).toBeNull();
    const farExit = new Promise((resolve) => far.once('exit', resolve));
    await watchdog.close();
    await farExit;
  });
});

async function eventually(check: () => boolean, withinMs = 5_000): Promise<void> {
  const until = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

it('this host enforces everything (root, bubblewrap, cgroups, prlimit: tools/setup.sh installs bubblewrap)', () => {
  expect(sandbox.report.missing).toEqual([]);
  expect(sandbox.describe()).toMatch(/^isolation strict: /);
  expect(existsSync(locks)).toBe(true);
});
