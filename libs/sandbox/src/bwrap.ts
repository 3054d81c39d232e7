import { existsSync, lstatSync, readlinkSync } from 'node:fs';

/** A host path the sandbox shows, and how. */
export interface Mount {
  path: string;
  access: 'read' | 'write';
}

/** Everything a sandbox shows of its host, and how it runs its child. */
export interface SandboxView {
  /** The runtime, read-only (system directories, the image's own files); missing ones are skipped. */
  runtime: string[];
  /** The child's cwd: shown read-write, and where it starts. `/` shows nothing more. */
  cwd: string;
  /** Inherited paths, each read-only or read-write. */
  paths: Mount[];
  /** Host paths hidden under an empty tmpfs even when inside a shown path (state directories). */
  hide: string[];
  /** The private result directory, read-write. */
  resultDir: string;
  /** `none`: a network namespace of its own (loopback only). */
  network: 'host' | 'none';
}

/**
 * bwrap's options for a view: new pid, ipc, uts and cgroup namespaces (and net when asked), a
 * fresh /proc, a minimal /dev and a private /tmp, then the view's mounts in an order where a
 * later one can sit inside an earlier one, the child in a session of its own (no terminal
 * injection), and the whole sandbox killed with its launcher.
 *
 * `privileged`: bwrap runs as root (the worker's) and the child is switched to its own uid after
 * (util-linux's unshare): root can show paths whose parents are closed to others (a checkout
 * under a 0700 home), and the directories it creates on the way to a mount are made searchable
 * (0755).
 * Otherwise bwrap runs as the child's uid in a user namespace of its own, and shows only what
 * that uid can reach.
 *
 * A path in `pinned` is bound from the descriptor the launcher holds for it, not by its name:
 * what is mounted is what was checked, whatever a child renames or swaps in meanwhile.
 */
export function bwrapArgs(
  view: SandboxView,
  handshake: boolean,
  privileged: boolean,
  /** Paths bound from a descriptor the launcher holds (`--bind-fd`): path -> its fd there. */
  pinned: ReadonlyMap<string, number> = new Map(),
  /** The launcher's descriptor of a seccomp program bwrap installs before the child runs. */
  seccompFd?: number,
): string[] {
  const args = privileged ? [] : ['--unshare-user'];
  if (seccompFd !== undefined) args.push('--seccomp', String(seccompFd));
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
  if (view.network === 'none') args.push('--unshare-net');
  args.push('--die-with-parent', '--new-session', '--hostname', 'libos');
  // /tmp like a host's: anyone may create, only owners may remove (bwrap as root makes it root's).
  args.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/tmp');
  // Host directories shown: what lies inside them exists already, with the host's permissions.
  const shown: string[] = [];
  const made = new Set(['/proc', '/dev', '/tmp']);
  const mount = (option: '--bind' | '--ro-bind', path: string) => {
    if (privileged) {
      // Each directory on the way that bwrap would create, searchable, unless a mount shows it.
      for (const dir of ancestors(path)) {
        if (made.has(dir) || shown.some((top) => isInside(dir, top))) continue;
        made.add(dir);
        args.push('--perms', '0755', '--dir', dir);
      }
    }
    const fd = pinned.get(path);
    if (fd === undefined) args.push(option, path, path);
    else args.push(`${option}-fd`, String(fd), path);
    shown.push(path);
  };
  for (const path of view.runtime) {
    // A merged-/usr host's /bin, /lib, ... are symlinks: the same link costs no mount.
    const link = symlinkTarget(path);
    if (link !== undefined) args.push('--symlink', link, path);
    else if (existsSync(path)) mount('--ro-bind', path);
  }
  if (view.cwd !== '/') mount('--bind', view.cwd);
  for (const entry of view.paths) mount(entry.access === 'write' ? '--bind' : '--ro-bind', entry.path);
  for (const path of view.hide) if (isShown(path, view)) args.push('--tmpfs', path);
  mount('--bind', view.resultDir);
  args.push('--chdir', view.cwd);
  if (handshake) args.push('--info-fd', '3', '--block-fd', '4');
  return args;
}

/** `/a/b/c` -> `/a`, `/a/b` (outermost first; not `/`, not the path itself). */
function ancestors(path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  return parts.slice(0, -1).map((_, i) => `/${parts.slice(0, i + 1).join('/')}`);
}

const links = new Map<string, string | undefined>();

/** Where `path` links to, when it is a symlink (cached: the host's layout does not change). */
export function symlinkTarget(path: string): string | undefined {
  if (!links.has(path)) {
    let target: string | undefined;
    try {
      if (lstatSync(path).isSymbolicLink()) target = readlinkSync(path);
    } catch {}
    links.set(path, target);
  }
  return links.get(path);
}

/** A hidden path needs a tmpfs only where a shown path would reveal it. */
function isShown(path: string, view: SandboxView): boolean {
  const shown = [...view.runtime, ...(view.cwd === '/' ? [] : [view.cwd]), ...view.paths.map((m) => m.path)];
  return shown.some((dir) => isInside(path, dir));
}

/** `path` equals `dir` or lies below it. */
export function isInside(path: string, dir: string): boolean {
  if (dir === '/') return true;
  return path === dir || path.startsWith(`${dir}/`);
}
