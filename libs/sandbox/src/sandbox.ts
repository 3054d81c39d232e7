import { spawnSync } from 'node:child_process';
import {
  chownSync,
  closeSync,
  existsSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { resolve } from 'node:path';
import { type ConfinedSpawn, type Confinement, findExecutable, isExecutableFile } from '@libos/runner';
import { bwrapArgs, isInside, type Mount, type SandboxView, symlinkTarget } from './bwrap.js';
import { type CgroupHost, CgroupHost as Cgroups, type ChildCgroup } from './cgroups.js';
import { rlimitArgs, type SandboxLimits, setRlimits, setRlimitsAvailable } from './limits.js';
import { SyscallFilter } from './seccomp.js';
import { UidPool, type UidRange } from './uid-pool.js';

export type IsolationMode = 'strict' | 'auto' | 'none';

export interface SandboxSettings {
  /** `strict`: refuse to start without every feature; `auto`: what the host offers; `none`: off. */
  mode: IsolationMode;
  /** Children's uids (each running child has one of its own). */
  uids: UidRange;
  /** Where the uid locks live, shared by every worker of the host (root-only). */
  lockDir: string;
  /** Host paths every sandbox shows read-only, besides the system directories. */
  runtime: string[];
  /** Host paths hidden in every sandbox (state directories: `.libos`, the uid locks). */
  hide: string[];
  /** The cgroup under the worker's own in which sandboxes get theirs. */
  cgroupName: string;
  /** Instead of the worker's own cgroup: a delegated directory (v2) or a path in each hierarchy (v1). */
  cgroupRoot?: string | undefined;
  bwrap: string;
  prlimit: string;
}

/** The system directories a sandbox shows read-only (those the host has). */
export const SYSTEM_RUNTIME = [
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/etc',
  '/opt',
];

/** The environment a sandbox gives its child before the image's own: a home it can write. */
export const SANDBOX_ENV: Readonly<Record<string, string>> = { HOME: '/tmp', TMPDIR: '/tmp' };

/** What this host enforces, feature by feature; `level` sums it up. */
export interface IsolationReport {
  level: 'strict' | 'partial' | 'none';
  /** A uid of its own per running child (the worker must be root). */
  uid: boolean;
  /** bwrap: pid, mount, ipc, uts and user namespaces; the child sees only its view of the host. */
  namespaces: boolean;
  /** Memory and process-count limits of the whole sandbox. */
  cgroupMemory: boolean;
  cgroupPids: boolean;
  /** A CPU share per sandbox: one child's processes, however many, cannot starve the host's. */
  cgroupCpu: boolean;
  /** Pause stops every process of the sandbox at once. */
  freeze: boolean;
  cgroupVersion: 1 | 2 | null;
  /** Per-process limits (open files, file size, CPU time, processes of its uid). */
  rlimits: boolean;
  /** A seccomp filter refuses the kernel keyring's calls, which reach across a reused uid (bwrap). */
  seccomp: boolean;
  /** What is missing for `strict`, in words. */
  missing: string[];
}

/** What a worker with `LIBOS_ISOLATION=none` enforces: nothing. */
export const NO_ISOLATION: Readonly<IsolationReport> = {
  level: 'none',
  uid: false,
  namespaces: false,
  cgroupMemory: false,
  cgroupPids: false,
  cgroupCpu: false,
  freeze: false,
  cgroupVersion: null,
  rlimits: false,
  seccomp: false,
  missing: ['isolation is off (LIBOS_ISOLATION=none)'],
};

/** One launch's request: where it works, what it may see, what it may use. */
export interface ConfineRequest {
  cwd: string;
  paths: Mount[];
  /** The image's runtime: host paths shown read-only. */
  runtime: string[];
  limits: SandboxLimits;
  network: 'host' | 'none';
}

/**
 * A worker's containment of its children: it probes the host once (bwrap, user namespaces, uid
 * switching, cgroups, prlimit), says what it enforces, and confines each launch accordingly.
 * Knows nothing of Redis, attempts or leases.
 */
export class Sandbox {
  private constructor(
    readonly settings: SandboxSettings,
    readonly report: IsolationReport,
    private readonly pool: UidPool | undefined,
    private readonly cgroups: CgroupHost | undefined,
    private readonly useBwrap: boolean,
    /** Rlimits set on the sandbox's init through the handshake, not by a prlimit(1) per launch. */
    readonly rlimitsAtHandshake = false,
    /** The prlimit(1) program is there (for launches whose rlimits cannot wait for bwrap's set-up). */
    readonly prlimitProgram = false,
    /** What bwrap installs before the child runs (see seccomp.ts). */
    readonly filter: SyscallFilter | undefined = undefined,
  ) {}

  /** Probes the host; throws in `strict` mode when something is missing (naming it). */
  static create(given: SandboxSettings): Sandbox {
    // bwrap by its path, found once: by name, every launch's exec searched PATH first.
    const bwrap = findProgram(given.bwrap, process.cwd(), process.env.PATH) ?? given.bwrap;
    const settings = { ...given, bwrap };
    if (settings.mode === 'none') {
      return new Sandbox(settings, NO_ISOLATION, undefined, undefined, false);
    }
    const missing: string[] = [];
    const root = process.getuid?.() === 0;
    if (!root) missing.push('a uid per child: the worker is not root, so it cannot switch uids');
    const pool = root ? new UidPool(settings.uids, settings.lockDir) : undefined;
    const namespaces = probeBwrap(settings.bwrap, root);
    const uidSwitch = pool ? probeUidSwitch(pool) : undefined;
    if (uidSwitch) missing.push(`a uid per child: ${uidSwitch}`);
    if (!namespaces.ok) missing.push(`namespaces: ${namespaces.problem}`);
    const filter = namespaces.ok ? seccompFilter(settings.bwrap, root) : undefined;
    if (filter && !filter.ok) missing.push(`a syscall filter: ${filter.problem}`);
    // With bwrap, the spawner sets them on the sandbox's init itself: one program fewer per launch.
    // Not with a setuid bwrap run by another uid: its init is still root's when it reports.
    const rlimitsAtHandshake = namespaces.ok && setRlimitsAvailable() && (root || !isSetuid(settings.bwrap));
    const prlimitProgram = existsSync(settings.prlimit);
    const rlimits = rlimitsAtHandshake || prlimitProgram;
    if (!rlimits) missing.push(`rlimits: no ${settings.prlimit} (util-linux)`);
    const cgroups = root ? Cgroups.detect(settings.cgroupName, settings.cgroupRoot) : undefined;
    const support = cgroups?.support;
    if (!support) missing.push('cgroups: none writable by the worker');
    else {
      if (!support.memory) missing.push(`cgroups: no memory controller (cgroup v${support.version})`);
      if (!support.pids) missing.push(`cgroups: no pids controller (cgroup v${support.version})`);
      if (!support.cpu) missing.push(`cgroups: no cpu controller (cgroup v${support.version})`);
      if (!support.freeze) missing.push('cgroups: no freezer');
    }
    // Cgroups are joined through bwrap's handshake; without bwrap they are not used.
    const useCgroups = namespaces.ok ? cgroups : undefined;
    const report: IsolationReport = {
      level: missing.length === 0 ? 'strict' : 'partial',
      uid: pool !== undefined,
      namespaces: namespaces.ok,
      cgroupMemory: Boolean(useCgroups?.support.memory),
      cgroupPids: Boolean(useCgroups?.support.pids),
      cgroupCpu: Boolean(useCgroups?.support.cpu),
      freeze: Boolean(useCgroups?.support.freeze),
      cgroupVersion: useCgroups?.support.version ?? null,
      rlimits,
      seccomp: filter?.ok === true,
      missing,
    };
    if (settings.mode === 'strict' && missing.length > 0) {
      throw new Error(`isolation strict cannot be enforced on this host: ${missing.join('; ')}`);
    }
    return new Sandbox(
      settings,
      report,
      pool,
      useCgroups,
      namespaces.ok,
      rlimitsAtHandshake,
      prlimitProgram,
      filter?.ok ? filter.filter : undefined,
    );
  }

  /** One line for the worker's start-up log. */
  describe(): string {
    const r = this.report;
    if (r.level === 'none') return 'isolation none: children run as the worker, unconfined';
    const parts = [
      r.uid ? `uid per child (${this.settings.uids.first}-${this.settings.uids.last})` : 'no uid switch',
      r.namespaces ? 'bwrap namespaces' : 'no namespaces',
      r.cgroupVersion
        ? `cgroup v${r.cgroupVersion} ${['memory', 'pids', 'freezer', 'cpu'].filter((_, i) => [r.cgroupMemory, r.cgroupPids, r.freeze, r.cgroupCpu][i]).join('+')}`
        : 'no cgroups',
      r.rlimits ? 'rlimits' : 'no rlimits',
      r.seccomp ? 'no keyring calls (seccomp)' : 'no syscall filter',
    ];
    return `isolation ${r.level}: ${parts.join(', ')}${r.missing.length ? ` (missing: ${r.missing.join('; ')})` : ''}`;
  }

  /**
   * A confinement for one launch, with its uid already allocated (so a watchdog can be armed).
   * `beforeRelease` runs before the uid can go to another launch (e.g. to disarm that watchdog,
   * which kills by uid).
   */
  confine(request: ConfineRequest, beforeRelease?: () => void): ChildSandbox {
    return new ChildSandbox(this, request, this.pool, this.cgroups, this.useBwrap, beforeRelease);
  }

  close(): void {
    this.cgroups?.removeAll();
    this.pool?.releaseAll();
  }
}

/** One launch's sandbox: the runner's `Confinement`. */
export class ChildSandbox implements Confinement {
  /** The launch's own uid (and gid), when the host switches uids. */
  readonly uid: number | undefined;
  #cgroup: ChildCgroup | undefined;
  /** This launch's rlimits are set at the handshake (else by prlimit(1), or not at all). */
  #rlimitsAtHandshake = false;
  #released = false;

  constructor(
    private readonly host: Sandbox,
    private readonly request: ConfineRequest,
    private readonly pool: UidPool | undefined,
    private readonly cgroups: CgroupHost | undefined,
    private readonly useBwrap: boolean,
    private readonly beforeRelease: (() => void) | undefined,
  ) {
    this.uid = pool?.acquire();
  }

  async spawn(
    child: {
      command: string;
      args: string[];
      cwd?: string;
      env: Readonly<Record<string, string | undefined>>;
    },
    resultDir: string,
  ): Promise<ConfinedSpawn> {
    const { request, uid } = this;
    const hidden = this.host.settings.hide;
    requireDirectory(request.cwd, 'cwd');
    requireNotHidden(request.cwd, 'cwd', hidden);
    for (const mount of request.paths) {
      requireReal(mount.path, 'inherited path');
      requireNotHidden(mount.path, 'inherited path', hidden);
    }
    // Inside the sandbox a missing program is the launcher's exit 127; say it as a spawn would.
    requireProgram(child.command, request.cwd, child.env.PATH);
    if (uid !== undefined) chownSync(resultDir, uid, uid);
    // Cgroups need the uid switch (root), so a cgroup is named by the host-unique uid.
    if (this.cgroups && uid !== undefined) this.#cgroup = this.cgroups.open(`u${uid}`, request.limits);
    const ids = uid === undefined ? {} : { uid, gid: uid };
    if (!this.useBwrap) {
      const [command = child.command, ...args] = this.#limited(child, false);
      return { command, args, cwd: request.cwd, ...ids, handshake: false };
    }
    const view: SandboxView = {
      runtime: [...SYSTEM_RUNTIME, ...this.host.settings.runtime, ...request.runtime],
      cwd: request.cwd,
      paths: request.paths,
      hide: this.host.settings.hide,
      resultDir,
      network: request.network,
    };
    // Every path but the system's is bound from a descriptor opened and checked here: a name
    // checked and then mounted by root could meanwhile be swapped for a symlink to anywhere.
    // A child's paths (cwd, inherited) must be real paths; the operator's (runtime, the result
    // directory under TMPDIR) may lead through a symlink to where they really are.
    const pinned = [
      { path: request.cwd, what: 'cwd', exact: true },
      ...request.paths.map(({ path }) => ({ path, what: 'inherited path', exact: true })),
      ...view.runtime
        .filter((path) => !SYSTEM_RUNTIME.includes(path) && !symlinkTarget(path) && existsSync(path))
        .map((path) => ({ path, what: 'runtime path', exact: false })),
      { path: resultDir, what: 'result directory', exact: false },
    ].filter(({ path }) => path !== '/');
    // Set at the handshake, the rlimits hold bwrap's own set-up too, which opens files beside the
    // pinned ones: an image allowing fewer than those and a margin gets them from prlimit(1),
    // after bwrap, where the program is there.
    this.#rlimitsAtHandshake =
      this.host.rlimitsAtHandshake &&
      (request.limits.openFiles >= HANDSHAKE_FD + pinned.length + BWRAP_SETUP_FILES ||
        !this.host.prlimitProgram);
    const handshake = this.#cgroup !== undefined || this.#rlimitsAtHandshake;
    const first = handshake ? HANDSHAKE_FD : 3;
    const pins = pinPaths(pinned, first);
    let filterFd: number | undefined;
    try {
      filterFd = this.host.filter?.open();
    } catch (error) {
      for (const fd of pins.fds) closeSync(fd);
      throw error;
    }
    const limited = this.#limited(child, this.#rlimitsAtHandshake);
    // As root, bwrap itself stays root (to reach every path it shows) and the child is switched
    // to its uid, without capabilities or a way to regain any, as the sandbox's last step.
    const privileged = uid !== undefined;
    const switched = privileged ? [...switchUid(uid), ...limited] : limited;
    // The filter's descriptor follows the pinned paths' in the launcher.
    const seccompFd = filterFd === undefined ? undefined : first + pins.fds.length;
    return {
      command: this.host.settings.bwrap,
      args: [...bwrapArgs(view, handshake, privileged, pins.at, seccompFd), '--', ...switched],
      cwd: '/',
      handshake,
      fds: filterFd === undefined ? pins.fds : [...pins.fds, filterFd],
    };
  }

  /** The child's argv, behind prlimit(1) unless its rlimits are set at the handshake (or nowhere). */
  #limited(child: { command: string; args: string[] }, atHandshake: boolean): string[] {
    return this.host.prlimitProgram && !atHandshake
      ? [this.host.settings.prlimit, ...rlimitArgs(this.request.limits), '--', child.command, ...child.args]
      : [child.command, ...child.args];
  }

  async started(_pid: number, report: NodeJS.ReadableStream, release: NodeJS.WritableStream): Promise<void> {
    const childPid = await readChildPid(report);
    try {
      if (this.#rlimitsAtHandshake) setRlimits(childPid, this.request.limits);
      await this.#cgroup?.join(childPid);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      throw new Error('the sandbox ended before it started (it failed setting up its view)');
    }
    // bwrap reads the release only once its mounts are made: one that failed meanwhile is gone,
    // and the write's EPIPE fails this launch (reported by the callback; the event must not throw).
    release.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      release.write('1', (error) =>
        error ? reject(new Error(`the sandbox ended before it started (${error.message})`)) : resolve(),
      );
    });
    release.end();
  }

  /**
   * Stop and continue are signals to every process of the sandbox, so each shows as stopped (T)
   * like any SIGSTOPped process; with a freezer the list is taken while the sandbox is frozen, so
   * nothing can fork past it. Kill is the cgroup's (the launcher's death takes the rest anyway).
   */
  signal(signal: 'SIGSTOP' | 'SIGCONT' | 'SIGKILL'): void {
    const cgroup = this.#cgroup;
    if (signal === 'SIGKILL') {
      cgroup?.kill();
      return;
    }
    const frozen = signal === 'SIGSTOP' && cgroup?.freeze() === true;
    const pids = cgroup ? cgroup.pids() : this.uid === undefined ? [] : processesOfUid(this.uid);
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
      } catch {}
    }
    if (frozen) cgroup?.thaw();
  }

  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    this.beforeRelease?.();
    if (this.uid === undefined) return;
    // The uid goes back to the pool only once nothing of this launch is left in its cgroup; a
    // sandbox that will not empty keeps its uid locked (until the worker closes), used by no one.
    // bwrap reports the child's exit before its init has torn the namespaces down: about one
    // launch in ten still shows that init here, for a millisecond or two. The waits start short
    // and grow, so a launch's result is not held a whole period for it.
    // A member list that cannot be read counts as empty here, as before, but is not remembered
    // as empty: the uid's next launch then kills whatever is left first.
    const cgroup = this.#cgroup;
    let empty = cgroup ? cgroup.isEmpty() : true;
    for (let wait = 1, waited = 0; cgroup && empty === false && waited < 500; wait = Math.min(2 * wait, 20)) {
      cgroup.kill();
      await new Promise((resolve) => setTimeout(resolve, wait));
      waited += wait;
      empty = cgroup.isEmpty();
    }
    if (empty !== false) this.pool?.release(this.uid);
  }
}

/** Every process whose real uid is `uid` (the watchdog process has its own copy: it imports nothing). */
export function processesOfUid(uid: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      const match = /\nUid:\s+(\d+)/.exec(status);
      // A zombie is done: it can neither run nor be signalled.
      if (match && Number(match[1]) === uid && !/\nState:\s+Z/.test(status)) found.push(Number(name));
    } catch {}
  }
  return found;
}

/**
 * util-linux's unshare, asked for no namespace: how a root-run sandbox's child gets its own uid.
 * It sets the uid and gid from numbers and drops the supplementary groups. Capabilities go with
 * the uid (a switch from 0 empties the permitted and effective sets; under bwrap the inheritable
 * and ambient ones are empty), and bwrap's no_new_privs keeps any exec from gaining one, which
 * is why the bounding set is left as it is. setpriv did this before, and cost ~1.3 ms more CPU
 * a launch: it looks a numeric uid up as a user name first (NSS: nss_systemd loaded, userdb
 * searched), and the group too.
 */
const UNSHARE = '/usr/bin/unshare';

/** The argv prefix that runs what follows as `uid` (and gid `uid`), with no groups. */
function switchUid(uid: number): string[] {
  return [UNSHARE, `--setuid=${uid}`, `--setgid=${uid}`, '--'];
}

/** With the handshake, bwrap's fds 3 and 4 are its pipes and the pinned paths start at 5. */
const HANDSHAKE_FD = 5;
/** What bwrap may open while it sets a view up, beyond the pinned paths (mountinfo, directories). */
const BWRAP_SETUP_FILES = 32;

/** The set-user-ID mode bit (Node's fs.constants has no S_ISUID). */
const S_ISUID = 0o4000;

/** A setuid-root program (an older distribution's bwrap). */
function isSetuid(program: string): boolean {
  try {
    return (statSync(program).mode & S_ISUID) !== 0;
  } catch {
    return false;
  }
}

/**
 * bwrap runs a trivial sandbox here (as root when privileged, else in a user namespace), with
 * `filter` installed when given.
 */
function probeBwrap(
  bwrap: string,
  privileged: boolean,
  filter?: SyscallFilter,
): { ok: true } | { ok: false; problem: string } {
  const filterFd = filter?.open();
  const ran = spawnSync(
    bwrap,
    [
      ...bwrapArgs(
        { runtime: SYSTEM_RUNTIME, cwd: '/', paths: [], hide: [], resultDir: '/tmp', network: 'host' },
        false,
        privileged,
        new Map(),
        filterFd === undefined ? undefined : 3,
      ),
      '--',
      'true',
    ],
    { stdio: ['ignore', 'ignore', 'pipe', ...(filterFd === undefined ? [] : [filterFd])], timeout: 10_000 },
  );
  if (filterFd !== undefined) closeSync(filterFd);
  if (ran.error)
    return { ok: false, problem: `${bwrap} cannot run (${ran.error.message}); install bubblewrap` };
  if (ran.status !== 0) {
    return {
      ok: false,
      problem: `${bwrap} failed (${ran.stderr.toString().trim() || `status ${ran.status}`}): are user namespaces enabled?`,
    };
  }
  return { ok: true };
}

/** The keyring filter, tried through bwrap; a problem when there is none for this host or it fails. */
function seccompFilter(
  bwrap: string,
  privileged: boolean,
): { ok: true; filter: SyscallFilter } | { ok: false; problem: string } {
  const filter = SyscallFilter.forHost();
  if (!filter) return { ok: false, problem: `none for this architecture (${process.arch})` };
  const tried = probeBwrap(bwrap, privileged, filter);
  return tried.ok ? { ok: true, filter } : { ok: false, problem: `bwrap --seccomp: ${tried.problem}` };
}

/**
 * What keeps `switchUid` from working here (util-linux's unshare has --setuid since 2.32), tried
 * with a uid of the pool: a uid in another worker's use could have the try killed with its child.
 */
function probeUidSwitch(pool: UidPool): string | undefined {
  let uid: number;
  try {
    uid = pool.acquire();
  } catch {
    return undefined; // every uid of the range in use on this host: untried (launches say so)
  }
  try {
    const [command = UNSHARE, ...args] = switchUid(uid);
    const ran = spawnSync(command, [...args, 'true'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 10_000,
    });
    if (ran.error) return `${command} cannot run (${ran.error.message}); install util-linux`;
    if (ran.status !== 0) return `${command} ${args.join(' ')} failed (${ran.stderr.toString().trim()})`;
    return undefined;
  } finally {
    pool.release(uid);
  }
}

/** Programs found by `requireProgram` (bounded: cleared when full). */
const foundPrograms = new Map<string, string>();
const FOUND_MAX = 1024;

/**
 * Throws as a spawn would when `command` is no executable file. A program found before is checked
 * again on its own instead of searching PATH (an access and a stat for each directory before it:
 * ~0.2 ms of a spawner's time a launch in a profile); when that fails, PATH is searched again.
 * Only whether it exists matters here: the sandbox's own exec searches PATH itself.
 */
function requireProgram(command: string, cwd: string, path: string | undefined): void {
  const key = JSON.stringify([command.includes('/') ? cwd : '', path ?? null, command]);
  const known = foundPrograms.get(key);
  if (known !== undefined && isExecutableFile(known)) return;
  const program = findProgram(command, cwd, path);
  if (program === undefined) {
    foundPrograms.delete(key);
    throw new Error(`spawn ${command} ENOENT`);
  }
  if (foundPrograms.size >= FOUND_MAX) foundPrograms.clear();
  foundPrograms.set(key, program);
}

/**
 * The executable file `command` names, as the sandbox's exec will find it: on PATH (the runner's
 * search, as execvp does it) unless it has a slash, then relative to the cwd.
 */
function findProgram(command: string, cwd: string, path: string | undefined): string | undefined {
  if (!command.includes('/')) return findExecutable(command, cwd, path);
  const program = resolve(cwd, command);
  return isExecutableFile(program) ? program : undefined;
}

/** O_PATH (Linux): a descriptor that names a file without opening it (no FIFO blocks, no device wakes). */
const O_PATH = 0o10000000;

/**
 * Opens each path (O_PATH) and checks that what was opened is where the path really is (`exact`:
 * the path itself, no symlink on the way, nothing swapped since it was checked); their
 * descriptors, and the fd each will be in the launcher, numbered from `first`. Throws (closing
 * what it opened) when one is not.
 */
function pinPaths(
  paths: { path: string; what: string; exact: boolean }[],
  first: number,
): { fds: number[]; at: Map<string, number> } {
  const fds: number[] = [];
  const at = new Map<string, number>();
  try {
    for (const { path, what, exact } of paths) {
      if (at.has(path)) continue;
      const expected = exact ? path : realpathSync(path);
      const fd = openSync(path, O_PATH);
      fds.push(fd);
      const opened = readlinkSync(`/proc/self/fd/${fd}`);
      if (opened !== expected)
        throw new Error(`${what} ${path} changed while it was checked (it leads to ${opened})`);
      at.set(path, first + fds.length - 1);
    }
  } catch (error) {
    for (const fd of fds) closeSync(fd);
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(`a path to show in the sandbox is gone: ${(error as Error).message}`);
    }
    throw error;
  }
  return { fds, at };
}

/** A shown path inside a hidden one would show what the worker hides (its state, its secrets). */
function requireNotHidden(path: string, what: string, hidden: readonly string[]): void {
  const hiding = hidden.find((dir) => isInside(path, dir));
  if (hiding !== undefined)
    throw new Error(`${what} ${path} is inside ${hiding}, which this worker hides from children`);
}

function requireReal(path: string, what: string): void {
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    throw new Error(`${what} ${path} does not exist on this worker's host (ENOENT)`);
  }
  // A symlink could point the mount anywhere; only real paths are shown.
  if (real !== path) throw new Error(`${what} ${path} is a symbolic link (to ${real}) on this worker's host`);
}

function requireDirectory(path: string, what: string): void {
  requireReal(path, what);
  if (!lstatSync(path).isDirectory())
    throw new Error(`${what} ${path} is not a directory on this worker's host`);
}

/** Reads bwrap's info JSON (`{"child-pid": N, ...}`) from fd 3. */
function readChildPid(report: NodeJS.ReadableStream): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => finish(new Error('the sandbox did not start within 10 s')), 10_000);
    const finish = (outcome: number | Error) => {
      clearTimeout(timer);
      report.removeAllListeners('data');
      if (typeof outcome === 'number') resolve(outcome);
      else reject(outcome);
    };
    report.on('data', (chunk: Buffer | string) => {
      text += chunk.toString();
      // The number's end too: a chunk could end inside it.
      const match = /"child-pid"\s*:\s*(\d+)\s*[,}\n]/.exec(text);
      if (match) finish(Number(match[1]));
    });
    report.once('end', () =>
      finish(new Error(`the sandbox ended before it started: ${text.trim() || 'no report'}`)),
    );
    report.once('error', (error) => finish(error instanceof Error ? error : new Error(String(error))));
  });
}
