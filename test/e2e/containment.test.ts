import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LibosError } from '@libos/sdk';
import { hostPid, SELF_PID } from '@libos/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  asSelf,
  Cluster,
  eventually,
  isAlive,
  READ_REQUEST,
  type Scratch,
  scratch,
  shImage,
  sleep,
  waitForFile,
  writeResult,
} from '../src/index.js';
import { WORKSPACE } from '../src/scratch.js';

/**
 * Every attack here is what an untrusted child would try, run by a real child in its real sandbox
 * (bwrap namespaces, a uid of its own, cgroup v1 limits, rlimits) on this machine's kernel. The
 * attacker writes what it observed to a scratch file, starting with "tried", and the test asserts
 * on those findings: an attack that "did nothing" is shown to have run.
 */

/**
 * The workers' lease: the harness's 3 s, so the watchdog fences a child 2.4 s after the last
 * renewal was sent, 600 ms before the lease can expire. 1.5 s (E2E_CONTAINMENT_LEASE_MS=1500)
 * passes on an idle machine too, but under CI's load a worker with 50 children may go 1.2 s
 * without a renewal while alive, and the watchdog then rightly kills a child it still runs.
 */
const LEASE_MS = Number(process.env.E2E_CONTAINMENT_LEASE_MS ?? 3_000);
const REPO = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');
const REDIS_PASSWORD = `e2e-redis-${randomBytes(12).toString('hex')}`;
const FIRST_CHILD_UID = 20_000;
const LAST_CHILD_UID = 29_999;

let cluster: Cluster;
let files: Scratch;
/** A scratch dir no child is given: its secret must stay out of every sandbox. */
let elsewhere: Scratch;

/** The uid of what a child printed as SELF_PID. */
const uidOf = (printed: string) => Number(printed.split(':')[0]);

/** The host pids of what children wrote to `name` as SELF_PID, once there are `count` of them. */
function osPids(name: string, count = 1): Promise<number[]> {
  return eventually(
    async () => {
      const pids = (await files.lines(name)).map(hostPid);
      return pids.length >= count && pids.every((pid) => pid !== undefined) ? (pids as number[]) : undefined;
    },
    { withinMs: 20_000, what: `${count} pid(s) in ${name}` },
  );
}

/** The findings an attacker wrote to `name`, once it wrote `last` (its final line). */
function findingsUntil(name: string, last: RegExp): Promise<string[]> {
  return eventually(
    async () => {
      const lines = await files.lines(name);
      return lines.some((line) => last.test(line)) ? lines : undefined;
    },
    { withinMs: 20_000, what: `the findings in ${name}` },
  );
}

/** A field of /proc/<pid>/status (VmRSS in kB, Uid, ...). */
function statusField(pid: number, field: string): string {
  const match = new RegExp(`\\n${field}:\\s+([^\\n]*)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match?.[1]) throw new Error(`no ${field} in /proc/${pid}/status`);
  return match[1].trim();
}

/**
 * Alive and still running as `uid`: pids wrap around quickly on this host (pid_max 32768) while
 * children fork, and a uid belongs to one running sandbox, so the pair names one process.
 */
function aliveAs(pid: number, uid: number): boolean {
  try {
    return isAlive(pid) && Number(statusField(pid, 'Uid').split(/\s+/)[0]) === uid;
  } catch {
    return false;
  }
}

const workerPid = (index = 0) => {
  const pid = cluster.workers[index]?.pid;
  if (pid === undefined) throw new Error(`worker ${index} is not running`);
  return pid;
};

/**
 * The loopback port of the cluster's redis-server, as `ps` shows it (`redis-server 127.0.0.1:PORT`);
 * the server is the one whose cwd is the cluster's Redis dir.
 */
function redisPort(): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) !== cluster.redis.dir) continue;
      const shown = /^redis-server \S+:(\d+)/.exec(readFileSync(`/proc/${entry}/cmdline`, 'utf8'));
      if (shown) return Number(shown[1]);
    } catch {}
  }
  throw new Error('the cluster’s redis-server was not found');
}

/** A result a finished attacker writes: it ran to its end. */
const DONE = writeResult('"status":"completed","output":"done"');

beforeAll(async () => {
  files = await scratch('libos-e2e-contain-');
  elsewhere = await scratch('libos-e2e-elsewhere-');
  writeFileSync(elsewhere.path('secret.txt'), 'elsewhere-secret\n');
  // The filesystem attacker's layout (the hidden state dir must exist before the workers start).
  for (const dir of ['fs/cwd/.libos', 'fs/ro-dir', 'fs/rw-dir'])
    mkdirSync(files.path(dir), { recursive: true });
  for (const dir of ['fs', 'fs/cwd', 'fs/ro-dir', 'fs/rw-dir']) chmodSync(files.path(dir), 0o777);
  writeFileSync(files.path('fs/secret.txt'), 'sibling-secret\n');
  writeFileSync(files.path('fs/cwd/.libos/state'), 'state-secret\n');
  writeFileSync(files.path('fs/ro-dir/data'), 'ro-content\n');
  cluster = await Cluster.start({
    workers: 1,
    concurrency: 50,
    // As `libos up` runs it: Redis over a unix socket, its loopback port behind a password.
    unixSocket: true,
    redisPassword: REDIS_PASSWORD,
    workerEnv: { LIBOS_LEASE_MS: String(LEASE_MS), LIBOS_SANDBOX_HIDE: files.path('fs/cwd/.libos') },
  });
  await cluster.admin.putImage(
    'echo',
    shImage(`${READ_REQUEST}; ${writeResult('"status":"completed","output":1')}`),
  );
});
afterAll(async () => {
  // A worker left frozen by a failed test must be able to stop.
  for (const worker of cluster?.workers ?? []) worker?.kill('SIGCONT');
  const strays = await cluster?.stop();
  await files?.remove();
  await elsewhere?.remove();
  expect(strays ?? []).toEqual([]);
});

describe('another child’s token', () => {
  it('is neither in any environ the attacker can see nor readable at its host pid; each child has a uid of its own', async () => {
    await cluster.admin.putImage(
      'holder',
      shImage(
        `${READ_REQUEST}; echo ${SELF_PID} > "$2/holder.pid"; ${waitForFile('$2/holder.release')}; ${DONE}`,
        files.dir,
      ),
    );
    await cluster.admin.putImage(
      'token-thief',
      shImage(
        [
          READ_REQUEST,
          'f="$2/thief"',
          `echo "tried ${SELF_PID}" > "$f"`,
          waitForFile('$2/holder.hostpid'),
          'target=$(cat "$2/holder.hostpid")',
          'echo "scanned $(ls -d /proc/[0-9]* | wc -l)" >> "$f"',
          // Every LIBOS_TOKEN in every environ it can see: its own, or another's.
          `for e in /proc/[0-9]*/environ; do tr '\\0' '\\n' < "$e" 2>/dev/null | grep '^LIBOS_TOKEN='; done | sort -u | while read -r t; do if [ "$t" = "LIBOS_TOKEN=$LIBOS_TOKEN" ]; then echo "token own"; else echo "token other $t"; fi; done >> "$f"`,
          // The holder's environ at its host pid, directly; then a kill of it.
          'if cat "/proc/$target/environ" > /dev/null 2> /tmp/err; then echo "direct read" >> "$f"; else echo "direct refused $(cat /tmp/err)" >> "$f"; fi',
          'if kill -9 "$target" 2> /tmp/err; then echo "kill sent" >> "$f"; else echo "kill refused $(cat /tmp/err)" >> "$f"; fi',
          'echo end >> "$f"',
          DONE,
        ].join('\n'),
        files.dir,
      ),
    );
    const victim = await cluster.root('holds a token');
    const attacker = await cluster.root('steals tokens');
    const held = await victim.client.spawn({ goal: 'hold my token', image: 'holder' });
    const [holderPid] = await osPids('holder.pid');
    // The token is there to be stolen: the holder's environ (read by root on the host) has it.
    const holderToken = readFileSync(`/proc/${holderPid}/environ`, 'latin1')
      .split('\0')
      .find((entry) => entry.startsWith('LIBOS_TOKEN='));
    expect(holderToken).toMatch(/^LIBOS_TOKEN=.{16,}/);

    const thief = await attacker.client.spawn({ goal: 'find tokens', image: 'token-thief' });
    writeFileSync(files.path('holder.hostpid'), String(holderPid));
    expect(await attacker.client.wait({ child_pid: thief.pid })).toMatchObject({ status: 'exited' });
    const found = await findingsUntil('thief', /^end$/);
    expect(found[0]).toMatch(/^tried \d+:\d+$/);
    expect(found).toContain('token own'); // the scan works: it finds its own token
    expect(found.filter((line) => line.startsWith('token other'))).toEqual([]);
    expect(found.join('\n')).not.toContain(holderToken!.slice('LIBOS_TOKEN='.length));
    expect(found.find((line) => line.startsWith('direct'))).toMatch(
      /^direct refused .*(No such file or directory|Permission denied)/,
    );
    expect(found.find((line) => line.startsWith('kill'))).toMatch(
      /^kill refused .*(No such process|not permitted)/,
    );
    expect(isAlive(holderPid!)).toBe(true);

    const holderUid = uidOf((await files.lines('holder.pid'))[0]!);
    const thiefUid = uidOf(found[0]!.slice('tried '.length));
    const workerUid = Number(statusField(workerPid(), 'Uid').split(/\s+/)[0]);
    expect(holderUid).not.toBe(thiefUid);
    for (const uid of [holderUid, thiefUid]) {
      expect(uid).toBeGreaterThanOrEqual(FIRST_CHILD_UID);
      expect(uid).toBeLessThanOrEqual(LAST_CHILD_UID);
      expect(uid).not.toBe(0);
      expect(uid).not.toBe(workerUid);
    }

    await files.touch('holder.release');
    expect(await victim.client.wait({ child_pid: held.pid })).toMatchObject({ status: 'exited' });
  });
});

describe('the admin token and the cluster’s secrets', () => {
  it('the coordinator’s and worker’s /proc are out of reach, and no visible /proc holds a secret', async () => {
    await cluster.admin.putImage('secret-hunter', {
      ...shImage(
        [
          READ_REQUEST,
          'f="$2/hunter"',
          'echo tried > "$f"',
          'for p in "$3" "$4"; do for k in environ cmdline; do if cat "/proc/$p/$k" > /dev/null 2> /tmp/err; then echo "read $p $k" >> "$f"; else echo "refused $p $k $(cat /tmp/err)" >> "$f"; fi; done; done',
          // The needles are put together here, so no command line of the sandbox holds them.
          `printf '%s%s\\n' 'e2e-admin' '-token' > /tmp/admin`,
          `printf '%s%s\\n' "$5" "$6" > /tmp/redis`,
          `printf '%s%s\\n' 'visible-' 'canary' > /tmp/canary`,
          // -q: a match counts even where another file is unreadable (the sandbox's init is root's).
          'for n in admin redis canary; do if grep -a -q -F -f "/tmp/$n" /proc/[0-9]*/environ /proc/[0-9]*/cmdline > /dev/null 2>&1; then echo "found $n" >> "$f"; else echo "no $n" >> "$f"; fi; done',
          "echo \"pids $(ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' ')\" >> \"$f\"",
          'echo "init $(cat /proc/1/comm)" >> "$f"',
          'echo end >> "$f"',
          DONE,
        ].join('\n'),
        files.dir,
        String(cluster.coordinator?.pid),
        String(workerPid()),
        // The Redis password in two halves (no argument of the sandbox holds it whole).
        REDIS_PASSWORD.slice(0, 10),
        REDIS_PASSWORD.slice(10),
      ),
      // What the attacker's own environ holds, to show that its grep finds what is there.
      env: { E2E_CANARY: 'visible-canary' },
    });
    // The secrets are there on the host to be found.
    expect(readFileSync(`/proc/${cluster.coordinator?.pid}/environ`, 'latin1')).toContain(ADMIN_TOKEN);
    const parent = await cluster.root('hunts secrets');
    const child = await parent.client.spawn({ goal: 'find the admin token', image: 'secret-hunter' });
    expect(await parent.client.wait({ child_pid: child.pid })).toMatchObject({ status: 'exited' });
    const found = await findingsUntil('hunter', /^end$/);
    expect(found[0]).toBe('tried');
    const refusals = found.filter((line) => line.startsWith('refused'));
    expect(refusals).toHaveLength(4);
    for (const line of refusals) expect(line).toMatch(/No such file or directory|Permission denied/);
    expect(found.filter((line) => line.startsWith('read '))).toEqual([]);
    expect(found).toContain('found canary');
    expect(found).toContain('no admin');
    expect(found).toContain('no redis');
    // Its `ps`: only its own sandbox, whose pid 1 is bwrap's init.
    const pids = found
      .find((line) => line.startsWith('pids '))!
      .slice('pids '.length)
      .trim()
      .split(' ')
      .map(Number);
    expect(pids).toContain(1);
    expect(pids.length).toBeLessThanOrEqual(8);
    expect(Math.max(...pids)).toBeLessThan(100);
    expect(found).toContain('init bwrap');
  });
});

describe('Redis', () => {
  it('its unix socket is outside the sandbox and its loopback port refuses a client without the password', async () => {
    const socket = cluster.redis.url;
    expect(socket.startsWith('/')).toBe(true);
    const port = redisPort();
    // The port is the live Redis: with the password, it answers.
    const probe = new Redis({ host: '127.0.0.1', port, password: REDIS_PASSWORD, lazyConnect: true });
    await probe.connect();
    expect(await probe.ping()).toBe('PONG');
    probe.disconnect();
    await cluster.admin.putImage(
      'redis-intruder',
      shImage(
        [
          READ_REQUEST,
          'f="$2/intruder"',
          'echo tried > "$f"',
          'if [ -e "$3" ]; then echo "socket visible" >> "$f"; else echo "socket absent" >> "$f"; fi',
          'if ls "$(dirname "$3")" > /dev/null 2>&1; then echo "socket dir visible" >> "$f"; else echo "socket dir absent" >> "$f"; fi',
          'echo "socket ping: $(redis-cli -s "$3" ping 2>&1)" >> "$f"',
          'echo "tcp ping: $(redis-cli -h 127.0.0.1 -p "$4" ping 2>&1)" >> "$f"',
          `echo "tcp keys: $(redis-cli -h 127.0.0.1 -p "$4" keys '*' 2>&1 | head -3)" >> "$f"`,
          'echo end >> "$f"',
          DONE,
        ].join('\n'),
        files.dir,
        socket,
        String(port),
      ),
    );
    const parent = await cluster.root('reaches for Redis');
    const child = await parent.client.spawn({ goal: 'talk to Redis', image: 'redis-intruder' });
    expect(await parent.client.wait({ child_pid: child.pid })).toMatchObject({ status: 'exited' });
    const found = await findingsUntil('intruder', /^end$/);
    expect(found[0]).toBe('tried');
    expect(found).toContain('socket absent');
    expect(found).toContain('socket dir absent');
    expect(found.find((line) => line.startsWith('socket ping:'))).toMatch(/No such file or directory/);
    expect(found.find((line) => line.startsWith('tcp ping:'))).toMatch(/NOAUTH/);
    expect(found.find((line) => line.startsWith('tcp keys:'))).toMatch(/NOAUTH/);
    expect(found.join('\n')).not.toContain('PONG');
  });
});

describe('path escapes', () => {
  it('the kernel refuses a working_directory or inherited path outside the parent’s cwd, creating no child', async () => {
    const parent = await cluster.root('escapes its cwd');
    const before = await parent.client.listChildren();
    const attempts = [
      { working_directory: '/etc' },
      { working_directory: '/' },
      { working_directory: '../..' },
      { working_directory: `${WORKSPACE}/../x` },
      { inherited_paths: ['/etc/passwd'] },
      { inherited_paths: [{ path: '/root', kind: 'dir' as const, access: 'read' as const }] },
      { inherited_paths: [`${WORKSPACE}/../../etc/shadow`] },
    ];
    for (const attempt of attempts) {
      const refused = await parent.client
        .spawn({ goal: 'escape', image: 'echo', ...attempt })
        .catch((e: unknown) => e);
      expect(refused, JSON.stringify(attempt)).toBeInstanceOf(LibosError);
      expect(refused, JSON.stringify(attempt)).toMatchObject({ code: 'permission_denied', reason: 'path' });
    }
    expect(await parent.client.listChildren()).toEqual(before);
  });

  it('a symbolic link inside the cwd that points out is refused by the worker before the child runs', async () => {
    symlinkSync('/etc', files.path('link-to-etc'));
    await cluster.admin.putImage(
      'ran-marker',
      shImage(`${READ_REQUEST}; echo ran > "$2/link-ran"; ${DONE}`, files.dir),
    );
    const parent = await cluster.root('escapes through a link');
    for (const attempt of [
      { working_directory: files.path('link-to-etc') },
      { inherited_paths: [files.path('link-to-etc/passwd')] },
    ]) {
      const child = await parent.client.spawn({ goal: 'escape by link', image: 'ran-marker', ...attempt });
      const waited = await parent.client.wait({ child_pid: child.pid });
      expect(waited, JSON.stringify(attempt)).toMatchObject({
        status: 'failed',
        outcome: { type: 'failed', reason: expect.stringMatching(/symbolic link/) },
      });
    }
    expect(existsSync(files.path('link-ran'))).toBe(false);
  });
});

describe('the filesystem view', () => {
  it('system dirs and the repository are read-only, other dirs invisible, the state dir hidden; cwd, /tmp and a write grant writable', async () => {
    const hostTmpName = `libos-e2e-escape-${randomBytes(4).toString('hex')}`;
    await cluster.admin.putImage(
      'fs-prober',
      shImage(
        [
          READ_REQUEST,
          'f=./findings',
          'echo tried > "$f"',
          'w() { if err=$( { : > "$1"; } 2>&1 ); then echo "wrote $1"; else echo "refused $1: $err"; fi; }',
          'r() { if c=$(cat "$1" 2>&1); then echo "read $1: $c"; else echo "unreadable $1: $c"; fi; }',
          `for p in /usr/x /etc/x /bin/x /lib/x "$3/x" "$3/test/x" "$4/ro-dir/x" "$4/rw-dir/x" ./x "/tmp/$6" "$4/x"; do w "$p" >> "$f"; done`,
          'for p in "$4/ro-dir/data" "$4/secret.txt" "$5/secret.txt" ./.libos/state; do r "$p" >> "$f"; done',
          'echo "listing $4: $(ls -A "$4" | tr \'\\n\' \' \')" >> "$f"',
          'echo "listing .libos: $(ls -A ./.libos | tr \'\\n\' \' \')" >> "$f"',
          'echo "listing /tmp: $(ls -A /tmp | tr \'\\n\' \' \')" >> "$f"',
          'echo "listing /dev/shm: $(ls -A /dev/shm | tr \'\\n\' \' \')" >> "$f"',
          'echo "listing home: $(ls -A "$(dirname "$(dirname "$1")")" | tr \'\\n\' \' \')" >> "$f"',
          'echo end >> "$f"',
          DONE,
        ].join('\n'),
        files.dir,
        REPO,
        files.path('fs'),
        elsewhere.dir,
        hostTmpName,
      ),
    );
    const parent = await cluster.root('probes the filesystem');
    const child = await parent.client.spawn({
      goal: 'look around',
      image: 'fs-prober',
      working_directory: files.path('fs/cwd'),
      inherited_paths: [
        { path: files.path('fs/ro-dir'), kind: 'dir', access: 'read' },
        { path: files.path('fs/rw-dir'), kind: 'dir', access: 'write' },
      ],
    });
    expect(await parent.client.wait({ child_pid: child.pid })).toMatchObject({ status: 'exited' });
    const found = await findingsUntil('fs/cwd/findings', /^end$/);
    const fs = files.path('fs');
    expect(found[0]).toBe('tried');
    const line = (prefix: string) => found.find((l) => l.startsWith(prefix));
    for (const path of ['/usr/x', '/etc/x', '/bin/x', '/lib/x', `${REPO}/x`, `${REPO}/test/x`]) {
      expect(line(`refused ${path}:`), path).toMatch(/Read-only file system/);
    }
    // The inherited read grant is world-writable on the host: only the read-only mount refuses.
    expect(line(`refused ${fs}/ro-dir/x:`)).toMatch(/Read-only file system/);
    // The parent's cwd beyond the child's own is not shown: a write there lands, if anywhere, in
    // the sandbox's own skeleton of mount points (bwrap's tmpfs root), never on the host.
    expect(line(`wrote ${fs}/x`) ?? line(`refused ${fs}/x:`)).toBeDefined();
    expect(found).toContain(`wrote ${fs}/rw-dir/x`);
    expect(found).toContain('wrote ./x');
    expect(found).toContain(`wrote /tmp/${hostTmpName}`);
    expect(found).toContain(`read ${fs}/ro-dir/data: ro-content`);
    expect(line(`unreadable ${fs}/secret.txt:`)).toMatch(/No such file or directory/);
    expect(line(`unreadable ${elsewhere.dir}/secret.txt:`)).toMatch(/No such file or directory/);
    expect(line('unreadable ./.libos/state:')).toMatch(/No such file or directory/);
    expect(line('listing .libos:')).toBe('listing .libos: ');
    const listed = (dir: string) =>
      line(`listing ${dir}:`)!
        .slice(`listing ${dir}: `.length)
        .trim()
        .split(' ')
        .filter((name) => name !== '');
    expect(new Set(listed(fs).filter((name) => name !== 'x'))).toEqual(new Set(['cwd', 'ro-dir', 'rw-dir']));
    // Its /tmp is its own: its file, the mount point of its workspace, nothing of the host's /tmp
    // (where Redis's dir is); and the host's /tmp does not get its file.
    const tmp = listed('/tmp');
    expect(tmp).toContain(hostTmpName);
    expect(tmp).not.toContain(basename(cluster.redis.dir!));
    // Mount points: the workspace's, and the repository's where it lies under /tmp.
    const mountPoints = new Set([hostTmpName, basename(WORKSPACE)]);
    if (REPO.startsWith('/tmp/')) mountPoints.add(REPO.split('/')[2] ?? '');
    expect(tmp.filter((name) => !mountPoints.has(name))).toEqual([]);
    // Its result directory is in memory (the worker's default, /dev/shm), in its spawner's home
    // there: the one thing there, holding nothing but its own directory.
    const shm = listed('/dev/shm');
    expect(shm).toHaveLength(1);
    expect(shm[0]).toMatch(/^libos-spawner-/);
    const home = listed('home');
    expect(home).toHaveLength(1);
    expect(home[0]).toMatch(/^workflow-result-/);
    expect(existsSync(join('/tmp', hostTmpName))).toBe(false);
    // What it may write reached the host; what it may not did not.
    expect(existsSync(files.path('fs/rw-dir/x'))).toBe(true);
    expect(existsSync(files.path('fs/cwd/x'))).toBe(true);
    expect(existsSync(files.path('fs/ro-dir/x'))).toBe(false);
    expect(existsSync(files.path('fs/x'))).toBe(false);
    expect(existsSync(join(REPO, 'x'))).toBe(false);
    expect(readFileSync(files.path('fs/cwd/.libos/state'), 'utf8')).toBe('state-secret\n');
  });
});

describe('a setsid grandchild', () => {
  it('dies with its child, even in a session of its own and ignoring HUP and TERM', async () => {
    await cluster.admin.putImage(
      'daemonizer',
      shImage(
        [
          READ_REQUEST,
          'echo tried > "$2/daemonizer"',
          `i=0; while [ $i -lt 20 ]; do i=$((i+1)); setsid sh -c 'trap "" HUP TERM INT; echo ${SELF_PID} >> "$0"; exec sleep 60' "$2/grand.pids" & done`,
          waitForFile('$2/grand.release'),
          'echo "exiting" >> "$2/daemonizer"',
          DONE,
        ].join('\n'),
        files.dir,
      ),
    );
    const parent = await cluster.root('leaves daemons behind');
    const child = await parent.client.spawn({ goal: 'daemonize', image: 'daemonizer' });
    const grandchildren = await osPids('grand.pids', 20);
    const uid = uidOf((await files.lines('grand.pids'))[0]!);
    const anyAlive = () => grandchildren.some((pid) => aliveAs(pid, uid));
    expect(new Set(grandchildren).size).toBe(20);
    expect(grandchildren.every((pid) => aliveAs(pid, uid))).toBe(true);
    // Each is a session leader of its own: no process group or session ties it to the child.
    for (const pid of grandchildren) {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [, , pgrp, session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      expect(pgrp).toBe(session);
    }
    await files.touch('grand.release');
    const released = performance.now();
    expect(await parent.client.wait({ child_pid: child.pid })).toMatchObject({
      status: 'exited',
      outcome: { type: 'completed' },
    });
    expect(await files.lines('daemonizer')).toEqual(['tried', 'exiting']);
    await eventually(() => (anyAlive() ? undefined : true), {
      withinMs: 2_000,
      what: 'every grandchild to be gone',
    });
    // Killed with the sandbox, not outlived until their own `sleep 60` ended.
    expect(performance.now() - released).toBeLessThan(10_000);
    expect(await cluster.straysAfter()).toEqual([]);
  });
});

describe('a child that has called process_exit', () => {
  it('is cancelled as the contract cancels, a setsid grandchild with it, long before its deadline', async () => {
    await cluster.admin.putImage('exiter', {
      ...shImage(
        [
          READ_REQUEST,
          `setsid sh -c 'trap "" HUP TERM INT; echo ${SELF_PID} >> "$0"; exec sleep 120' "$2/exiter.pids" &`,
          'trap "" HUP TERM INT',
          asSelf('process_exit', '{"payload":{"said":"bye"}}'),
          'echo "$(date +%s%N) exit called" >> "$2/exiter"',
          // What it would go on doing, in the parent's cwd, until its deadline.
          'while true; do echo tick >> "$2/exiter.ticks"; sleep 0.1; done',
        ].join('\n'),
        files.dir,
      ),
      deadline_ms: 120_000,
    });
    const parent = await cluster.root('its child ends itself');
    const child = await parent.client.spawn({ goal: 'exit, then keep going', image: 'exiter' });
    const [grandchild] = await osPids('exiter.pids');
    const uid = uidOf((await files.lines('exiter.pids'))[0]!);
    const waited = await parent.client.wait({ child_pid: child.pid });
    expect(waited).toMatchObject({ status: 'exited', outcome: { type: 'completed' } });
    expect((await parent.client.readObject({ oid: waited.result_oid! })).payload).toEqual({ said: 'bye' });
    const exitedAt = performance.now();
    // Stdin's EOF, then the grace (5 s): every process of the sandbox is gone, not left to tick
    // into the parent's cwd for the 120 s of its deadline.
    await eventually(() => (aliveAs(grandchild!, uid) ? undefined : true), {
      withinMs: 15_000,
      what: 'the setsid grandchild to be gone',
    });
    const ticks = (await files.lines('exiter.ticks')).length;
    expect(ticks).toBeGreaterThan(0);
    await sleep(500);
    expect((await files.lines('exiter.ticks')).length).toBe(ticks);
    expect(performance.now() - exitedAt).toBeLessThan(15_000);
    expect(await files.lines('exiter')).toEqual([expect.stringMatching(/ exit called$/)]);
    // Its process stays as it ended itself: the worker's report of the cancelled run charges usage only.
    await sleep(300);
    expect(await cluster.admin.getProcess(child.pid)).toMatchObject({
      status: 'exited',
      outcome: { type: 'completed' },
    });
    expect(await cluster.straysAfter()).toEqual([]);
  });
});

describe('a fork bomb', () => {
  it('is stopped by its pids limit while a sibling completes and the worker lives on', async () => {
    await cluster.admin.putImage('bomb', {
      ...shImage(
        [
          READ_REQUEST,
          'f="$2/bomb"',
          `echo "tried ${SELF_PID}" > "$f"`,
          // Forks until the kernel refuses (the shell then dies of "Cannot fork"), counting.
          `sh -c 'n=0; while :; do sleep 30 & n=$((n+1)); echo "$n" > "$0.count"; done' "$f" 2> "$f.err"`,
          'echo "bomb exited $?" >> "$f"',
          // Holds what it has until its deadline (exec: no fork needed).
          'exec sleep 60',
        ].join('\n'),
        files.dir,
      ),
      limits: { pids: 32 },
      deadline_ms: 4_000,
      cancel_grace_ms: 200,
    });
    const bomber = await cluster.root('bombs');
    const neighbour = await cluster.root('lives next door');
    const bomb = await bomber.client.spawn({ goal: 'fork forever', image: 'bomb' });
    const sibling = await neighbour.client.spawn({ goal: 'just echo', image: 'echo' });
    const found = await findingsUntil('bomb', /^bomb exited/);
    expect(await neighbour.client.wait({ child_pid: sibling.pid })).toMatchObject({
      status: 'exited',
      outcome: { type: 'completed' },
    });
    expect(found[0]).toMatch(/^tried \d+:\d+$/);
    expect(found).toContain('bomb exited 2');
    expect(readFileSync(files.path('bomb.err'), 'utf8')).toMatch(/Cannot fork/);
    const forks = Number(readFileSync(files.path('bomb.count'), 'utf8'));
    expect(forks).toBeGreaterThan(10);
    expect(forks).toBeLessThan(32);
    // On the host, the whole sandbox (its uid's processes) stays within the limit.
    const uid = uidOf(found[0]!.slice('tried '.length));
    const ofUid = readdirSync('/proc').filter((entry) => {
      try {
        return /^\d+$/.test(entry) && Number(statusField(Number(entry), 'Uid').split(/\s+/)[0]) === uid;
      } catch {
        return false;
      }
    });
    expect(ofUid.length).toBeGreaterThan(10);
    expect(ofUid.length).toBeLessThanOrEqual(32 + 1); // + bwrap's launcher, outside the cgroup
    expect(isAlive(workerPid())).toBe(true);
    expect(isAlive(cluster.coordinator!.pid!)).toBe(true);
    expect(await bomber.client.wait({ child_pid: bomb.pid })).toMatchObject({
      status: 'failed',
      outcome: { type: 'timed_out' },
    });
    expect(await cluster.straysAfter()).toEqual([]);
  });
});

describe('a 1 GiB sparse result file', () => {
  it('fails the launch unread, and the worker’s memory does not grow with it', async () => {
    await cluster.admin.putImage(
      'sparse',
      shImage(
        `${READ_REQUEST}; echo tried > "$2/sparse"; truncate -s 1G "$1"; echo "size $(stat -c %s "$1") blocks $(stat -c %b "$1")" >> "$2/sparse"`,
        files.dir,
      ),
    );
    const rssKb = () => Number(statusField(workerPid(), 'VmRSS').split(/\s+/)[0]);
    const before = rssKb();
    const parent = await cluster.root('returns a huge result');
    const child = await parent.client.spawn({ goal: 'return 1 GiB', image: 'sparse' });
    const waited = await parent.client.wait({ child_pid: child.pid });
    const after = rssKb();
    expect(waited).toMatchObject({
      status: 'failed',
      outcome: {
        type: 'failed',
        reason: expect.stringMatching(
          /the result file is unreadable: it is 1073741824 bytes, over the limit of 16777216 bytes/,
        ),
      },
    });
    const found = await files.lines('sparse');
    expect(found[0]).toBe('tried');
    expect(found[1]).toMatch(/^size 1073741824 blocks \d+$/);
    expect(after - before).toBeLessThan(100 * 1024);
  });
});

describe('a memory hog', () => {
  it('is killed by its memory limit while a sibling completes', async () => {
    await cluster.admin.putImage('hog', {
      ...shImage(
        `${READ_REQUEST}; echo tried > "$2/hog"; exec /usr/bin/python3 -c 'import sys; s = "x" * (256 << 20); open(sys.argv[1], "a").write("allocated %d\\n" % len(s))' "$2/hog"`,
        files.dir,
      ),
      limits: { memory_mb: 64 },
      deadline_ms: 20_000,
    });
    const hogger = await cluster.root('hogs memory');
    const neighbour = await cluster.root('lives next door');
    const hog = await hogger.client.spawn({ goal: 'allocate 256 MB', image: 'hog' });
    const sibling = await neighbour.client.spawn({ goal: 'just echo', image: 'echo' });
    expect(await neighbour.client.wait({ child_pid: sibling.pid })).toMatchObject({ status: 'exited' });
    const waited = await hogger.client.wait({ child_pid: hog.pid });
    expect(waited).toMatchObject({ status: 'failed', outcome: { type: 'failed' } });
    // Killed by SIGKILL (the memory cgroup's OOM kill): bwrap's init reports it as 128 + 9.
    expect(waited.outcome?.reason).toBe('the child exited 137 without writing a result');
    expect(await files.lines('hog')).toEqual(['tried']);
    expect(isAlive(workerPid())).toBe(true);
  });
});

describe('a child filling its result directory', () => {
  it('in memory (/dev/shm, the default) it is killed by its memory limit, and its directory is removed', async () => {
    await cluster.admin.putImage('filler', {
      ...shImage(
        `${READ_REQUEST}; echo "$1" > "$2/filler"; exec head -c 268435456 /dev/zero > "\${1%/*}/fill"`,
        files.dir,
      ),
      limits: { memory_mb: 64 },
      deadline_ms: 20_000,
    });
    const filler = await cluster.root('fills its result directory');
    const child = await filler.client.spawn({ goal: 'write 256 MB beside the result', image: 'filler' });
    const waited = await filler.client.wait({ child_pid: child.pid });
    // The tmpfs pages count against the sandbox's memory: the cgroup's OOM kill ends it.
    expect(waited.outcome?.reason).toBe('the child exited 137 without writing a result');
    const [path] = await files.lines('filler');
    expect(path).toMatch(/^\/dev\/shm\/libos-spawner-[^/]+\/workflow-result-[^/]+\/result\.json$/);
    // Removed after the launch: by a recursive rm in the background, as it holds more than a result.
    await eventually(() => (existsSync(dirname(path!)) ? undefined : true), {
      withinMs: 10_000,
      everyMs: 50,
      what: 'the filled result directory to be removed',
    });
    expect(isAlive(workerPid())).toBe(true);
  });
});

describe('a frozen worker (SIGSTOP) with many running children', () => {
  it('its children are dead before their processes go stale, and attempt 2 never overlaps attempt 1', async () => {
    const COUNT = Number(process.env.E2E_FROZEN_CHILDREN ?? 50);
    // Each tick is bash builtins only (the clock from $EPOCHREALTIME, the pause a `read` timing
    // out on a fifo nobody writes): 50 tickers forking `date` and `sleep` 4 times a second were
    // 400 execs a second, enough on 2 cores to starve the worker past its fence.
    const ms = '$(( ${EPOCHREALTIME/./} / 1000 ))';
    const ticker = shImage(
      [
        READ_REQUEST,
        `p=\${id%:*}`,
        `echo "$id ${SELF_PID}" >> "$2/s-$p"`,
        `echo "$id start ${ms}" >> "$2/t-$p"`,
        'mkfifo /tmp/tick && exec 9<>/tmp/tick',
        `i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo "$id ${ms}" >> "$2/t-$p"; read -r -t 0.25 -u 9; done`,
        DONE,
      ].join('\n'),
      files.dir,
    );
    await cluster.admin.putImage('ticker', {
      ...ticker,
      command: 'bash',
      deadline_ms: 120_000,
    });
    const parent = await cluster.root(`runs ${COUNT} tickers`);
    const pids: string[] = [];
    for (let i = 0; i < COUNT; i += 1) {
      pids.push((await parent.client.spawn({ goal: `tick ${i}`, image: 'ticker' })).pid);
    }
    // Every attempt 1 is running: its OS process is known on the host.
    const firstOs = new Map<string, { os: number; uid: number }>();
    await eventually(
      async () => {
        for (const pid of pids) {
          if (firstOs.has(pid)) continue;
          const line = (await files.lines(`s-${pid}`)).find((l) => l.startsWith(`${pid}:1 `));
          const printed = line?.split(' ')[1];
          const os = printed ? hostPid(printed) : undefined;
          if (printed && os !== undefined) firstOs.set(pid, { os, uid: uidOf(printed) });
        }
        return firstOs.size === COUNT ? true : undefined;
      },
      { withinMs: 30_000, everyMs: 200, what: `all ${COUNT} tickers to run` },
    );
    await sleep(500);

    cluster.workers[0]!.kill('SIGSTOP');
    // When each attempt-1 child dies, watched closely (its OS process, by pid and uid)...
    const diedAt = new Map<string, number>();
    await eventually(
      () => {
        for (const [pid, { os, uid }] of firstOs) {
          if (!diedAt.has(pid) && !aliveAs(os, uid)) diedAt.set(pid, Date.now());
        }
        return diedAt.size === COUNT ? true : undefined;
      },
      { withinMs: 20_000, everyMs: 5, what: 'every attempt-1 child to die' },
    );
    // ...and when the reaper marked its process stale (`updated_at`, by Redis's clock on this host).
    const staleViews = await eventually(
      async () => {
        const views = await Promise.all(pids.map((pid) => cluster.admin.getProcess(pid)));
        return views.every((view) => view.status === 'paused') ? views : undefined;
      },
      { withinMs: 20_000, everyMs: 100, what: 'every process to be paused as stale' },
    );
    const staleAt = new Map(staleViews.map((view) => [view.pid, Date.parse(view.updated_at)]));
    for (const view of staleViews) {
      expect(view).toMatchObject({ pause_reason: 'stale_execution', resume_gate: 'host', attempt: 1 });
    }
    // Every old child was dead before its process could be resumed, i.e. before it was stale.
    const outlived = pids
      .filter((pid) => diedAt.get(pid)! > staleAt.get(pid)!)
      .map((pid) => `${pid} died ${diedAt.get(pid)! - staleAt.get(pid)!} ms after it was marked stale`);
    expect(outlived).toEqual([]);
    // Not one child or grandchild of the frozen worker is left (the frozen worker itself is not counted).
    expect(cluster.strays()).toEqual([]);

    await cluster.startWorker(1);
    for (const pid of pids) {
      expect(await cluster.admin.signalProcess(pid, 'resume', 'the old attempt is dead')).toMatchObject({
        attempt: 2,
      });
    }
    const secondStarted = async () => {
      for (const pid of pids) {
        if (!(await files.lines(`t-${pid}`)).some((l) => l.startsWith(`${pid}:2 start `))) return undefined;
      }
      return true;
    };
    await eventually(secondStarted, { withinMs: 30_000, everyMs: 200, what: 'every attempt 2 to start' });
    await sleep(2_000);

    // The frozen worker wakes: its renewals are refused, and nothing of attempt 1 comes back.
    const wokeAt = Date.now();
    cluster.workers[0]!.kill('SIGCONT');
    await sleep(2_500);
    for (const pid of pids) {
      const view = await cluster.admin.getProcess(pid);
      expect(view, `${pid}: ${JSON.stringify(view.outcome)}`).toMatchObject({
        status: 'running',
        attempt: 2,
      });
      const lines = await files.lines(`t-${pid}`);
      const stamps = (attempt: number) =>
        lines
          .filter((l) => l.startsWith(`${pid}:${attempt} `))
          .map((l) => Number(l.split(' ').at(-1)))
          .filter((n) => Number.isFinite(n) && n > 0);
      const first = stamps(1);
      const second = stamps(2);
      expect(first.length, pid).toBeGreaterThan(3);
      expect(second.length, pid).toBeGreaterThan(3);
      // No two live executions at once: attempt 1 wrote its last line before attempt 2 its first,
      // and before the process was marked stale; nothing of attempt 1 since the worker woke.
      expect(Math.max(...first), pid).toBeLessThan(Math.min(...second));
      expect(Math.max(...first), pid).toBeLessThanOrEqual(staleAt.get(pid)!);
      expect(Math.max(...first), pid).toBeLessThan(wokeAt);
      expect(
        (await files.lines(`s-${pid}`)).map((l) => l.split(' ')[0]),
        pid,
      ).toEqual([`${pid}:1`, `${pid}:2`]);
    }

    for (const pid of pids) await cluster.admin.signalProcess(pid, 'terminate', 'done');
    await eventually(
      async () => {
        const views = await Promise.all(pids.map((pid) => cluster.admin.getProcess(pid)));
        return views.every((view) => view.status === 'killed') ? true : undefined;
      },
      { withinMs: 15_000, what: 'every ticker to be killed' },
    );
    expect(await cluster.straysAfter(5_000)).toEqual([]);
  });
});
