import { lstatSync, readlinkSync } from 'node:fs';

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
 * bwrap's options for a view: new user, pid, ipc, uts and cgroup namespaces (and net when asked),
 * a fresh /proc, a minimal /dev and a private /tmp, then the view's mounts in an order where a
 * later one can sit inside an earlier one, the child in a session of its own (no terminal
 * injection), and the whole sandbox killed with its launcher.
 */
export function bwrapArgs(view: SandboxView, handshake: boolean): string[] {
  const args = ['--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
  if (view.network === 'none') args.push('--unshare-net');
  args.push('--die-with-parent', '--new-session', '--hostname', 'libos');
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp');
  for (const path of view.runtime) {
    // A merged-/usr host's /bin, /lib, ... are symlinks: the same link costs no mount.
    const link = symlinkTarget(path);
    if (link === undefined) args.push('--ro-bind-try', path, path);
    else args.push('--symlink', link, path);
  }
  if (view.cwd !== '/') args.push('--bind', view.cwd, view.cwd);
  for (const mount of view.paths)
    args.push(mount.access === 'write' ? '--bind' : '--ro-bind', mount.path, mount.path);
  for (const path of view.hide) if (isShown(path, view)) args.push('--tmpfs', path);
  args.push('--bind', view.resultDir, view.resultDir, '--chdir', view.cwd);
  if (handshake) args.push('--info-fd', '3', '--block-fd', '4');
  return args;
}

const links = new Map<string, string | undefined>();

/** Where `path` links to, when it is a symlink (cached: the host's layout does not change). */
function symlinkTarget(path: string): string | undefined {
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
