import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmdirSync,
  write,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { SandboxLimits } from './limits.js';

const ROOT = '/sys/fs/cgroup';
const writeTo = promisify(write);
/**
 * The v1 hierarchies a sandbox uses, and what each enforces. `cpu` writes no limit: a cgroup of
 * its own gives each sandbox one share, whatever it forks, and all of them together one share
 * against each process of the host's (the coordinator, the worker, Redis).
 */
const V1_CONTROLLERS = ['memory', 'pids', 'freezer', 'cpu'] as const;
type V1Controller = (typeof V1_CONTROLLERS)[number];

/** What the host's cgroups can do for a sandbox. */
export interface CgroupSupport {
  version: 1 | 2;
  memory: boolean;
  pids: boolean;
  freeze: boolean;
  /** A CPU share of its own (v1 `cpu`, v2 `cpu.weight`), not a quota. */
  cpu: boolean;
}

/**
 * Per-child cgroups under the worker's own: cgroup v1 (one directory per controller: memory,
 * pids, freezer, cpu) or v2 (one directory; memory.max, pids.max, cgroup.freeze, cgroup.kill). The
 * worker must be able to create them (root, or a delegated v2 subtree).
 */
export class CgroupHost {
  readonly #open = new Map<string, ChildCgroup>();

  private constructor(
    readonly support: CgroupSupport,
    /** v1: controller -> base directory; v2: the one base directory under 'v2'. */
    private readonly bases: ReadonlyMap<string, string>,
  ) {}

  /**
   * The cgroups this process may create children in, or undefined when it may not. `root`
   * overrides the base (v2: a delegated directory; v1: a path inside each hierarchy).
   */
  static detect(name: string, root?: string): CgroupHost | undefined {
    const own = ownCgroups();
    // v2 where the host mounts it at /sys/fs/cgroup, or where `root` is a v2 directory (a hybrid
    // host's /sys/fs/cgroup/unified, or a v2 hierarchy mounted beside v1 controllers).
    const v2Root = root !== undefined && existsSync(join(root, 'cgroup.controllers'));
    if (v2Root || existsSync(join(ROOT, 'cgroup.controllers'))) {
      const base = root ?? join(ROOT, own.get('') ?? '/', name);
      const parent = root ?? join(ROOT, own.get('') ?? '/');
      if (!tryMkdir(base)) return undefined;
      const available = readWords(join(parent, 'cgroup.controllers'));
      // Children of `base` get memory, pids and cpu only if `base` delegates them.
      for (const controller of ['memory', 'pids', 'cpu']) {
        if (available.has(controller)) tryWrite(join(base, 'cgroup.subtree_control'), `+${controller}`);
      }
      const enabled = readWords(join(base, 'cgroup.subtree_control'));
      return new CgroupHost(
        {
          version: 2,
          memory: enabled.has('memory'),
          pids: enabled.has('pids'),
          freeze: true,
          cpu: enabled.has('cpu'),
        },
        new Map([['v2', base]]),
      );
    }
    const bases = new Map<string, string>();
    for (const controller of V1_CONTROLLERS) {
      const hierarchy = join(ROOT, controller);
      if (!existsSync(join(hierarchy, 'cgroup.procs'))) continue;
      const base = root ? join(hierarchy, root) : join(hierarchy, own.get(controller) ?? '/', name);
      if (tryMkdir(base)) bases.set(controller, base);
    }
    if (bases.size === 0) return undefined;
    return new CgroupHost(
      {
        version: 1,
        memory: bases.has('memory'),
        pids: bases.has('pids'),
        freeze: bases.has('freezer'),
        cpu: bases.has('cpu'),
      },
      bases,
    );
  }

  /**
   * The cgroup (set) named `name`, created if missing, emptied of anything left in it (unless the
   * last launch's release saw it empty), with `limits` written. Creating and removing cgroups
   * costs milliseconds, so a sandbox's cgroup is kept for the next child of the same uid and
   * removed only with `remove`.
   */
  open(name: string, limits: SandboxLimits): ChildCgroup {
    let cgroup = this.#open.get(name);
    if (!cgroup) {
      const dirs = [...this.bases.entries()].map(([controller, base]) => ({
        controller,
        dir: join(base, name),
      }));
      for (const { dir } of dirs) mkdirSync(dir, { recursive: true });
      cgroup = new ChildCgroup(this.support, dirs);
      this.#open.set(name, cgroup);
    }
    cgroup.killLeftovers();
    cgroup.limit(limits);
    return cgroup;
  }

  /** Removes every cgroup this host opened (the worker is closing); busy ones are left. */
  removeAll(): void {
    for (const cgroup of this.#open.values()) {
      cgroup.kill();
      cgroup.remove();
    }
    this.#open.clear();
  }
}

/** One sandbox's cgroups. */
export class ChildCgroup {
  constructor(
    private readonly support: CgroupSupport,
    private readonly dirs: ReadonlyArray<{ controller: string; dir: string }>,
  ) {}

  get paths(): string[] {
    return this.dirs.map(({ dir }) => dir);
  }

  #limits: SandboxLimits | undefined;

  /** Writes the limits (only those that changed since the last launch of this cgroup). */
  limit(limits: SandboxLimits): void {
    const last = this.#limits;
    if (last && last.memoryMb === limits.memoryMb && last.pids === limits.pids) return;
    this.#limits = limits;
    const bytes = String(limits.memoryMb * 1024 * 1024);
    if (this.support.version === 2) {
      if (this.support.memory) {
        this.#write('v2', 'memory.max', bytes);
        tryWrite(join(this.#dir('v2') ?? '', 'memory.swap.max'), '0');
      }
      if (this.support.pids) this.#write('v2', 'pids.max', String(limits.pids));
      return;
    }
    if (this.support.memory) this.#write('memory', 'memory.limit_in_bytes', bytes);
    if (this.support.pids) this.#write('pids', 'pids.max', String(limits.pids));
  }

  /** Each cgroup's `cgroup.procs`, held open from the first join to `remove`. */
  #procs: number[] | undefined;
  #joining = 0;
  #removed = false;

  /**
   * Moves `pid` (the sandbox's init, before it starts the child) into every cgroup: one write to
   * each held `cgroup.procs`, on libuv's pool and all at once. Off the event loop because a write
   * to cgroup.procs may wait for an RCU grace period (see `cgroupJoinFix`), and made in turn on
   * the spawner's loop it held every other launch of the worker (18 % of a busy spawner's time in
   * a profile). On held descriptors because fs/promises' writeFile opens and closes a FileHandle
   * each time: three pool round trips a file, +0.4-0.8 ms of CPU a launch measured alone.
   */
  async join(pid: number): Promise<void> {
    if (this.#removed) throw new Error('the sandbox cgroup was removed (the worker is closing)');
    this.#procs ??= this.#openProcs();
    const procs = this.#procs;
    const text = String(pid);
    this.#joining += 1;
    try {
      await Promise.all(procs.map((fd) => writeTo(fd, text)));
    } finally {
      this.#joining -= 1;
      // Closed only once no write is in flight: a descriptor number reused meanwhile would
      // receive the pid.
      if (this.#removed && this.#joining === 0) this.#closeProcs();
    }
  }

  #openProcs(): number[] {
    const fds: number[] = [];
    try {
      for (const { dir } of this.dirs) fds.push(openSync(join(dir, 'cgroup.procs'), 'w'));
      return fds;
    } catch (error) {
      for (const fd of fds) closeSync(fd);
      throw error;
    }
  }

  #closeProcs(): void {
    for (const fd of this.#procs ?? []) closeSync(fd);
    this.#procs = undefined;
  }

  freeze(): boolean {
    if (!this.support.freeze) return false;
    if (this.support.version === 2) return tryWrite(join(this.#dir('v2') ?? '', 'cgroup.freeze'), '1');
    return tryWrite(join(this.#dir('freezer') ?? '', 'freezer.state'), 'FROZEN');
  }

  thaw(): boolean {
    if (!this.support.freeze) return false;
    if (this.support.version === 2) return tryWrite(join(this.#dir('v2') ?? '', 'cgroup.freeze'), '0');
    return tryWrite(join(this.#dir('freezer') ?? '', 'freezer.state'), 'THAWED');
  }

  /** Seen empty at its last launch's release: its next launch need not look again. */
  #seenEmpty = false;

  /**
   * Whether the cgroup holds no process, as a release asks before giving the uid back; undefined
   * when its member list cannot be read. An empty answer is remembered for `killLeftovers`.
   */
  isEmpty(): boolean | undefined {
    const pids = this.#members();
    const empty = pids === undefined ? undefined : pids.length === 0;
    this.#seenEmpty = empty === true;
    return empty;
  }

  /** Before a launch: kills whatever is left, unless the last release saw the cgroup empty. */
  killLeftovers(): void {
    if (this.#seenEmpty) this.#seenEmpty = false;
    else this.kill();
  }

  /**
   * SIGKILL to every process in the sandbox: v2 cgroup.kill; v1 each listed process (the pid
   * namespace's end takes anything forked meanwhile). Nothing to do, and nothing written, when
   * the cgroup is empty, as it is after a normal ending.
   */
  kill(): void {
    const pids = this.pids();
    if (pids.length === 0) return;
    if (this.support.version === 2) {
      const dir = this.#dir('v2');
      if (dir && tryWrite(join(dir, 'cgroup.kill'), '1')) return;
    }
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
  }

  /** The processes still in the sandbox (from the first cgroup; all hold the same ones). */
  pids(): number[] {
    return this.#members() ?? [];
  }

  #members(): number[] | undefined {
    const first = this.dirs[0];
    if (!first) return [];
    try {
      return readFileSync(join(first.dir, 'cgroup.procs'), 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map(Number);
    } catch {
      return undefined;
    }
  }

  /** Removes the cgroups; false while a process (a zombie not yet reaped) is still in one. */
  remove(): boolean {
    this.#removed = true;
    if (this.#joining === 0) this.#closeProcs();
    let removed = true;
    for (const { dir } of this.dirs) {
      try {
        rmdirSync(dir);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') removed = false;
      }
    }
    return removed;
  }

  #dir(controller: V1Controller | 'v2'): string | undefined {
    return this.dirs.find((entry) => entry.controller === controller)?.dir;
  }

  #write(controller: V1Controller | 'v2', file: string, value: string): void {
    const dir = this.#dir(controller);
    if (dir) writeFileSync(join(dir, file), value);
  }
}

/** This process's cgroup path per v1 controller ('' for the v2 hierarchy). */
function ownCgroups(): Map<string, string> {
  const own = new Map<string, string>();
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, controllers, path] = line.split(':');
      if (controllers === undefined || path === undefined) continue;
      for (const controller of controllers.split(',')) own.set(controller, path);
    }
  } catch {}
  return own;
}

function tryMkdir(dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true });
    return true;
  } catch {
    return false;
  }
}

function tryWrite(file: string, value: string): boolean {
  try {
    writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

function readWords(file: string): Set<string> {
  try {
    return new Set(readFileSync(file, 'utf8').split(/\s+/).filter(Boolean));
  } catch {
    return new Set();
  }
}

/**
 * When moving a process into a cgroup may wait for an RCU grace period here, the command that
 * stops it; undefined when none waits. The kernel keeps its cgroup lock fast for writers only
 * with a cgroup2 mount's `favordynmods`, and the lock is global: any cgroup2 mount with it serves
 * v1 hierarchies too, even an empty one mounted for the purpose on a host that has none.
 * Measured: about one join in ten took 10–35 ms without it, none over 0.3 ms with it.
 * `mounts` is /proc/mounts' text, `kernel` the kernel's release (`os.release()`): the option came
 * with Linux 6.0, so an older kernel is given no command it would refuse.
 */
export function cgroupJoinFix(mounts: string, kernel: string): string | undefined {
  const [major = 0] = kernel.split('.').map(Number);
  if (major < 6) return undefined;
  const cgroup2 = mounts
    .split('\n')
    .map((line) => line.split(' '))
    .filter(([, , type]) => type === 'cgroup2');
  if (cgroup2.some(([, , , options]) => (options ?? '').split(',').includes('favordynmods')))
    return undefined;
  const where = cgroup2[0]?.[1];
  return where
    ? `mount -o remount,favordynmods ${shellWord(mountPath(where))}`
    : `mkdir -p ${V1_HOST_CGROUP2} && mount -t cgroup2 -o favordynmods none ${V1_HOST_CGROUP2}`;
}

/** A mount point as /proc/mounts writes it, with space, tab, newline and backslash as octal escapes. */
function mountPath(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** `text` as one word for a POSIX shell: as it is when plain, else single-quoted. */
function shellWord(text: string): string {
  return /^[\w./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

/** Where `cgroupJoinFix` mounts an empty cgroup2 on a host without one (only for its option). */
const V1_HOST_CGROUP2 = '/run/libos-cgroup2';
