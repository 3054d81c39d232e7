import { constants as fsConstants } from 'node:fs';
import { createRequire } from 'node:module';
import { Socket } from 'node:net';
import { constants as osConstants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { getSystemErrorName } from 'node:util';
import { findExecutable } from './executable.js';

// Launching through glibc's posix_spawn (clone with CLONE_VM|CLONE_VFORK) instead of Node's
// spawn, whose fork copies the parent's page tables: measured in a 2,000-launch loop, 0.23–0.30 ms
// of parent CPU per launch against Node's 0.91 ms at 67 MB of RSS and 1.98 ms at 226 MB
// (bench/runner.ts compares the two). koffi is a maintained FFI with prebuilt binaries, so the
// host needs no compiler; without it (another libc or architecture) Node's spawn is used.

/** What a launch gets: the child's pid, its pipes, and its exit status (128 + n for signal n). */
export interface Launched {
  pid: number;
  stdin: Writable;
  stdout: Readable;
  stderr: Readable | undefined;
  /** The pipes to fd 3 onwards of the child, in order (the launcher's handshake). */
  extra: Array<Readable | Writable>;
  exit: Promise<number>;
}

export interface PosixSpawnRequest {
  command: string;
  args: string[];
  cwd: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  stderr: 'inherit' | 'ignore' | 'pipe';
  /** Pipes for fd 3 onwards: 'read' is a pipe the parent reads, 'write' one it writes. */
  extraPipes: ReadonlyArray<'read' | 'write'>;
  /** Descriptors the child gets after the pipes, in order; the caller keeps and closes its own. */
  fds: readonly number[];
}

/** A launch that failed before the child ran: the message Node's spawn would have given. */
export class PosixSpawnError extends Error {
  constructor(
    readonly code: string,
    command: string,
  ) {
    super(`spawn ${command} ${code}`);
  }
}

const AF_UNIX = 1;
const SOCK_STREAM = 1;
const SOCK_CLOEXEC = 0o2000000;
const F_DUPFD_CLOEXEC = 1030;
const WNOHANG = 1;
const POSIX_SPAWN_SETSIGDEF = 0x04;
const POSIX_SPAWN_SETSIGMASK = 0x08;
const POSIX_SPAWN_SETSID = 0x80;
// Opaque glibc structures, allocated generously (x86_64: 80, 336 and 128 bytes).
const FILE_ACTIONS_BYTES = 256;
const ATTR_BYTES = 512;
const SIGSET_BYTES = 256;
/** Signals 1–64 are the bits of a sigset's first 8 bytes (x86_64, aarch64). */
const LINUX_SIGNALS = 64;
/** How often live children are polled besides SIGCHLD: a backstop, and it keeps the loop alive. */
const REAP_BACKSTOP_MS = 1_000;

type LibC = ReturnType<typeof bind>;

function bind(koffi: typeof import('koffi')) {
  const libc = koffi.load('libc.so.6');
  return {
    koffi,
    spawn: libc.func(
      'int posix_spawn(_Out_ int *pid, const char *path, void *actions, void *attr, const char **argv, const char **envp)',
    ),
    actionsInit: libc.func('int posix_spawn_file_actions_init(void *actions)'),
    actionsDestroy: libc.func('int posix_spawn_file_actions_destroy(void *actions)'),
    addDup2: libc.func('int posix_spawn_file_actions_adddup2(void *actions, int fd, int newfd)'),
    addOpen: libc.func(
      'int posix_spawn_file_actions_addopen(void *actions, int fd, const char *path, int flags, int mode)',
    ),
    addChdir: libc.func('int posix_spawn_file_actions_addchdir_np(void *actions, const char *path)'),
    attrInit: libc.func('int posix_spawnattr_init(void *attr)'),
    attrDestroy: libc.func('int posix_spawnattr_destroy(void *attr)'),
    setFlags: libc.func('int posix_spawnattr_setflags(void *attr, short flags)'),
    setSigMask: libc.func('int posix_spawnattr_setsigmask(void *attr, void *set)'),
    setSigDefault: libc.func('int posix_spawnattr_setsigdefault(void *attr, void *set)'),
    socketpair: libc.func('int socketpair(int domain, int type, int protocol, _Out_ int *sv)'),
    fcntl: libc.func('int fcntl(int fd, int cmd, ...)'),
    close: libc.func('int close(int fd)'),
    waitpid: libc.func('int waitpid(int pid, _Out_ int *status, int options)'),
  };
}

let loaded: LibC | null | undefined;

/** glibc's posix_spawn through koffi, or null where it is not available (or LIBOS_SPAWN=node). */
function libc(): LibC | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  if (process.platform !== 'linux' || process.env.LIBOS_SPAWN === 'node') return loaded;
  try {
    loaded = bind(createRequire(import.meta.url)('koffi'));
  } catch {
    // no prebuilt koffi for this host, or no glibc: Node's spawn it is
  }
  return loaded;
}

/** Whether `posixSpawn` can be used here. */
export function posixSpawnAvailable(): boolean {
  return libc() !== null;
}

/**
 * Spawns `command` as the leader of a session of its own, with stdin and stdout (and stderr when
 * 'pipe') connected to socketpairs as Node's spawn does, every signal at its default disposition
 * and none blocked. Rejects with a `PosixSpawnError` when the child could not be started.
 *
 * posix_spawn itself runs on a thread of libuv's pool (koffi's async call): the caller is held
 * until the child has exec'd (vfork), 1-2 ms for bwrap, which on this event loop held every other
 * launch's events (31 % of a busy spawner's time in a CPU profile).
 */
export async function posixSpawn(request: PosixSpawnRequest): Promise<Launched> {
  const c = libc();
  if (c === null) throw new Error('posix_spawn is not available on this host');
  const env = Object.entries(request.env).flatMap(([key, value]) =>
    value === undefined ? [] : [`${key}=${value}`],
  );
  const path = findExecutable(request.command, request.cwd, request.env.PATH);
  if (path === undefined) throw new PosixSpawnError('ENOENT', request.command);

  // The child's fds 0..n-1: [source fd, the parent's end or undefined].
  const plan: Array<{ source: number; parent?: number; role?: 'read' | 'write' }> = [];
  const opened: number[] = [];
  const actions = Buffer.alloc(FILE_ACTIONS_BYTES);
  const attr = Buffer.alloc(ATTR_BYTES);
  try {
    const pair = (role: 'read' | 'write') => {
      const sv = new Int32Array(2);
      if (c.socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) !== 0) {
        throw new PosixSpawnError(errnoName(c.koffi.errno()), request.command);
      }
      opened.push(sv[0] as number, sv[1] as number);
      plan.push({ source: sv[1] as number, parent: sv[0] as number, role });
    };
    pair('write'); // stdin: the parent writes
    pair('read'); // stdout
    if (request.stderr === 'pipe') pair('read');
    else plan.push({ source: request.stderr === 'inherit' ? 2 : -1 });
    for (const role of request.extraPipes) pair(role);
    for (const fd of request.fds) plan.push({ source: fd });

    // Every source moves above the child's range first, so no dup2 overwrites a later source.
    const count = plan.length;
    const high = plan.map(({ source }) => {
      if (source < 0 || source >= count) return source;
      const copy = c.fcntl(source, F_DUPFD_CLOEXEC, 'int', count);
      if (copy < 0) throw new PosixSpawnError(errnoName(c.koffi.errno()), request.command);
      opened.push(copy);
      return copy;
    });

    c.actionsInit(actions);
    c.attrInit(attr);
    high.forEach((source, fd) => {
      if (source < 0) c.addOpen(actions, fd, '/dev/null', fsConstants.O_RDWR, 0);
      else c.addDup2(actions, source, fd);
    });
    if (request.cwd !== undefined) c.addChdir(actions, request.cwd);
    // Every signal back to its default, as libuv does: Node ignores SIGPIPE, and sigfillset would
    // leave out glibc's two internal signals, which its spawn then leaves ignored in the child.
    const signals = Buffer.alloc(SIGSET_BYTES);
    signals.fill(0xff, 0, LINUX_SIGNALS / 8);
    c.setSigDefault(attr, signals);
    c.setSigMask(attr, Buffer.alloc(SIGSET_BYTES)); // none blocked
    c.setFlags(attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

    const pid = [0];
    const status = await new Promise<number>((resolve, reject) =>
      c.spawn.async(
        pid,
        path,
        actions,
        attr,
        [request.command, ...request.args, null],
        [...env, null],
        (error: unknown, result: number) => (error ? reject(error) : resolve(result)),
      ),
    );
    if (status !== 0) throw new PosixSpawnError(errnoName(status), request.command);
    const childPid = pid[0] as number;

    // The child has its copies: close ours of its ends; the parent's ends become streams.
    const streams = plan.flatMap(({ parent, role }) => {
      if (parent === undefined) return [];
      opened.splice(opened.indexOf(parent), 1);
      return [new Socket({ fd: parent, readable: role === 'read', writable: role === 'write' })];
    });
    const [stdin, stdout, ...rest] = streams as [Socket, Socket, ...Socket[]];
    const stderr = request.stderr === 'pipe' ? rest.shift() : undefined;
    return { pid: childPid, stdin, stdout, stderr, extra: rest, exit: reaper.watch(childPid) };
  } finally {
    for (const fd of opened) c.close(fd);
    c.actionsDestroy(actions);
    c.attrDestroy(attr);
  }
}

/**
 * Reaps the children launched here: on SIGCHLD each live pid is polled with WNOHANG (libuv reaps
 * only its own pids the same way, so neither takes the other's), and every second as a backstop.
 */
class Reaper {
  readonly #live = new Map<number, (status: number) => void>();
  #timer: NodeJS.Timeout | undefined;
  readonly #onSignal = () => this.#poll();

  watch(pid: number): Promise<number> {
    return new Promise((resolve) => {
      if (this.#live.size === 0) {
        process.on('SIGCHLD', this.#onSignal);
        this.#timer = setInterval(this.#onSignal, REAP_BACKSTOP_MS);
      }
      this.#live.set(pid, resolve);
      // Spawned on another thread, the child may have ended (and its SIGCHLD come) before this.
      this.#poll();
    });
  }

  #poll(): void {
    const c = libc();
    if (c === null) return;
    const status = new Int32Array(1);
    for (const [pid, resolve] of this.#live) {
      const reaped = c.waitpid(pid, status, WNOHANG);
      if (reaped === 0 || (reaped < 0 && c.koffi.errno() === osConstants.errno.EINTR)) continue;
      this.#live.delete(pid);
      resolve(reaped < 0 ? 128 + osConstants.signals.SIGKILL : decodeStatus(status[0] as number));
    }
    if (this.#live.size === 0) {
      process.off('SIGCHLD', this.#onSignal);
      clearInterval(this.#timer);
    }
  }
}

const reaper = new Reaper();

/** A wait status as the runner counts it: the exit code, or 128 + the signal's number. */
function decodeStatus(status: number): number {
  const signal = status & 0x7f;
  return signal === 0 ? (status >> 8) & 0xff : 128 + signal;
}

function errnoName(errno: number): string {
  return getSystemErrorName(-errno);
}
