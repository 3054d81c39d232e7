import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AdminClient, ProcessClient } from '@libos/sdk';
import { readClusterFile, stateDir } from './cluster/state-dir.js';
import { CliError, resolution, shownPath } from './errors.js';

export interface GlobalOptions {
  url?: string;
  adminToken?: string;
  token?: string;
  dir?: string;
  json?: boolean;
}

/** Whether the process `pid` (of this host) still runs. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The coordinator URL: --url, LIBOS_URL, the running embedded cluster, else the default port.
 * A `cluster.json` whose `libos up` (or `libos demo`) is gone names no cluster: refused here.
 */
export async function coordinatorUrl(options: GlobalOptions): Promise<string> {
  if (options.url) return resolved(options.url, '--url');
  if (process.env.LIBOS_URL) return resolved(process.env.LIBOS_URL, 'LIBOS_URL');
  const dir = stateDir(options.dir);
  const cluster = await readClusterFile(dir);
  if (cluster) {
    const source = shownPath(join(dir, 'cluster.json'));
    resolved(cluster.url, source);
    if (!alive(cluster.pid))
      throw new CliError(`no cluster at ${cluster.url} (from ${source}): start one with \`libos up\``);
    return cluster.url;
  }
  return resolved(`http://127.0.0.1:${process.env.LIBOS_PORT ?? 7070}`, 'the default port');
}

function resolved(url: string, source: string): string {
  resolution.url = url;
  resolution.urlSource = source;
  return url;
}

export async function adminClient(options: GlobalOptions): Promise<AdminClient> {
  const url = await coordinatorUrl(options);
  resolution.role = 'admin';
  let adminToken = options.adminToken;
  resolution.tokenSource = '--admin-token';
  if (!adminToken && process.env.LIBOS_ADMIN_TOKEN) {
    adminToken = process.env.LIBOS_ADMIN_TOKEN;
    resolution.tokenSource = 'LIBOS_ADMIN_TOKEN';
  }
  if (!adminToken) {
    const file = join(stateDir(options.dir), 'admin-token');
    try {
      adminToken = (await readFile(file, 'utf8')).trim();
      resolution.tokenSource = shownPath(file);
    } catch {
      throw new CliError(
        'no admin token: pass --admin-token, set LIBOS_ADMIN_TOKEN, or run `libos up` here first',
      );
    }
  }
  return new AdminClient({ url, adminToken });
}

/** Acting as a process: --token or LIBOS_TOKEN (a launched child has it in its environment). */
export async function processClient(options: GlobalOptions): Promise<ProcessClient> {
  const token = options.token ?? process.env.LIBOS_TOKEN;
  if (!token) throw new CliError('no process token: pass --token or set LIBOS_TOKEN');
  const url = await coordinatorUrl(options);
  resolution.role = 'process';
  resolution.tokenSource = options.token ? '--token' : 'LIBOS_TOKEN';
  return new ProcessClient({ url, token });
}
