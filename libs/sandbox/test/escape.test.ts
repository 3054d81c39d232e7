// Attacks on a sandbox's set-up, replayed on the real kernel (root, bubblewrap, cgroups: what CI
// has): a cwd swapped for a symlink between the worker's check and bwrap's mount (bwrap mounts as
// root), a cwd inside a directory the worker hides, a sandbox that dies before it is released,
// and descriptors a worker inherited from whatever started it.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { contractRun } from '@libos/runner';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, Sandbox } from '../src/index.js';

const work = mkdtempSync(join(tmpdir(), 'sandbox-escape-'));
chmodSync(work, 0o755);
const shared = join(work, 'shared'); // a workspace every child may write, as docs/security.md has it
mkdirSync(shared, { mode: 0o777 });
chmodSync(shared, 0o1777);
const state = join(work, 'state'); // what the worker hides: a readable secret inside
mkdirSync(join(state, 'secrets'), { recursive: true });
writeFileSync(join(state, 'secrets', 'token'), 'HIDDEN-SECRET');
const closed = join(work, 'closed'); // a 0700 root directory with a readable canary below it
mkdirSync(join(closed, 'inner'), { recursive: true });
chmodSync(closed, 0o700);
writeFileSync(join(closed, 'inner', 'canary'), 'CANARY');
const locks = join(work, '.locks');
const settings = {
  mode: 'auto' as const,
  uids: { first: 31_500, last: 31_599 },
  lockDir: locks,
  runtime: [],
  hide: [locks, state],
  cgroupName: 'libos-escape-test',
  bwrap: 'bwrap',
  prlimit: '/usr/bin/prlimit',
};
const sandbox = Sandbox.create(settings);
afterAll(() => {
  sandbox.close();
  rmSync(work, { recursive: true, force: true });
});

const RESULT = `printf '{"version":1,"request_id":"t","status":"completed","output":"%s"}' "$out" > "$1"`;

function run(cwd: string, script: string) {
  return contractRun({
    command: 'sh',
    args: ['-c', `read -r request; ${script}`, 'sh', '{result_file}'],
    input: {},
    kind: 'k',
    id: 't',
    deadlineMs: 10_000,
    cancelGraceMs: 200,
    confinement: sandbox.confine({ cwd, paths: [], runtime: [], limits: DEFAULT_LIMITS, network: 'host' }),
  });
}

describe('a sandbox set up under attack', () => {
  it('never mounts what a cwd was swapped for between the check and the mount', async () => {
    // A child's directory and a symlink to the canary's directory trade places (renameat2
    // RENAME_EXCHANGE) as fast as they can while launches use the directory as their cwd.
    const mine = join(shared, 'mine');
    mkdirSync(mine);
    writeFileSync(join(mine, 'canary'), 'mine');
    symlinkSync(join(closed, 'inner'), join(shared, 'other'));
    const swapper = spawn(
      'python3',
      [
        '-c',
        'import ctypes, sys\nlibc = ctypes.CDLL(None, use_errno=True)\n' +
          'a, b = sys.argv[1].encode(), sys.argv[2].encode()\n' +
          'while True: libc.renameat2(-100, a, -100, b, 2)',
        mine,
        join(shared, 'other'),
      ],
      { stdio: 'ignore' },
    );
    try {
      const seen: string[] = [];
      const refused: string[] = [];
      for (let round = 0; round < 40; round++) {
        const results = await Promise.all(
          Array.from({ length: 4 }, () => run(mine, `out="$(cat canary 2>&1 | head -c 40)"; ${RESULT}`)),
        );
        for (const result of results) {
          if (result.terminal.type === 'captured') seen.push(String(result.report));
          else refused.push(result.terminal.reason ?? '');
        }
      }
      expect(seen.filter((text) => text.includes('CANARY'))).toEqual([]);
      expect(seen.length + refused.length).toBe(160);
      // Both sides of the race happened: launches ran in the child's own directory, others were refused.
      expect(seen).toContain('mine');
      // (A bwrap that refused can exit before the request is written to it: a stream failure.)
      for (const reason of refused)
        expect(reason).toMatch(
          /symbolic link|not a directory|does not exist|changed while it was checked|ended before it started|exited 1 without writing a result|child stream failed: write EPIPE/,
        );
    } finally {
      swapper.kill('SIGKILL');
    }
  }, 60_000);

  it('refuses a cwd inside a hidden directory, naming it', async () => {
    const result = await run(join(state, 'secrets'), `out="$(cat token)"; ${RESULT}`);
    expect(result.terminal.type).toBe('failed');
    expect(result.terminal.reason).toContain(
      `cwd ${join(state, 'secrets')} is inside ${state}, which this worker hides from children`,
    );
  });

  it('fails a launch whose sandbox died after reporting its pid, without an uncaught error', async () => {
    // bwrap reports the child's pid, then fails on a mount before it reads its release; the
    // report's first reader holds the event loop until it is dead, so the release meets a closed
    // pipe (EPIPE), as a slow handshake does. (Without `spawn`, `started` sets no rlimits.)
    const confinement = sandbox.confine({
      cwd: shared,
      paths: [],
      runtime: [],
      limits: DEFAULT_LIMITS,
      network: 'host',
    });
    const bwrap = spawn(
      'bwrap',
      ['--info-fd', '3', '--block-fd', '4', '--ro-bind', join(work, 'missing'), '/x', '--', 'true'],
      { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] },
    );
    const [report, release] = [bwrap.stdio[3] as Readable, bwrap.stdio[4] as Writable];
    report.once('data', () => {
      const until = Date.now() + 300;
      while (Date.now() < until); // bwrap dies meanwhile
    });
    await expect(confinement.started(bwrap.pid!, report, release)).rejects.toThrow(
      'the sandbox ended before it started (write EPIPE)',
    );
    await confinement.release();
  });
});

describe('descriptors a worker inherited', () => {
  const fixture = fileURLToPath(new URL('./fixtures/fd-worker.ts', import.meta.url));
  // The worker is started as a shell would with an open file (fd 100, no close-on-exec: Node
  // marks only the first ones, up to a gap, close-on-exec at start).
  function childFds(isolation: 'strict' | 'none'): Record<string, string> {
    const out = execFileSync(
      'bash', // dash redirects single-digit descriptors only
      [
        '-c',
        'exec 100</etc/hostname; exec "$@"',
        'bash',
        process.execPath,
        '--import',
        'tsx',
        '--conditions=@libos/source',
        fixture,
        JSON.stringify({ ...settings, uids: { first: 31_600, last: 31_699 }, cgroupName: 'libos-fd-test' }),
        shared,
        isolation,
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    return JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as Record<string, string>;
  }

  it.each(['strict', 'none'] as const)('reach no child (isolation %s)', (isolation) => {
    const fds = childFds(isolation);
    expect(Object.values(fds)).not.toContain('/etc/hostname');
    expect(fds['100']).toBeUndefined();
    // the child's own stdio and nothing else (not the spawner's pipe of beats, its fd 3)
    expect(Object.keys(fds).sort()).toEqual(['0', '1', '2', 'end']);
  });
});
