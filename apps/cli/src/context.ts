import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AdminClient, ProcessClient } from '@libos/sdk';
import { readClusterFile, stateDir } from './cluster/state-dir.js';
import { CliError, noClusterLine, resolution, shownPath } from './errors.js';

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
    if (!alive(cluster.pid)) throw new CliError(noClusterLine(cluster.url, source));
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
  return new AdminClient({ url, adminToken: await adminToken(options) });
}

/**
 * --admin-token, LIBOS_ADMIN_TOKEN or LIBOS_ADMIN_TOKEN_FILE (not both, as the coordinator takes
 * them), else the `.libos/admin-token` of `libos up`.
 */
async function adminToken(options: GlobalOptions): Promise<string> {
  const { LIBOS_ADMIN_TOKEN: inEnv, LIBOS_ADMIN_TOKEN_FILE: envFile } = process.env;
  if (options.adminToken) {
    resolution.tokenSource = '--admin-token';
    return options.adminToken;
  }
  if (inEnv && envFile) throw new CliError('set LIBOS_ADMIN_TOKEN or LIBOS_ADMIN_TOKEN_FILE, not both');
  if (inEnv) {
    resolution.tokenSource = 'LIBOS_ADMIN_TOKEN';
    return inEnv;
  }
  const file = envFile || join(stateDir(options.dir), 'admin-token');
  let token: string;
  try {
    token = (await readFile(file, 'utf8')).trim();
  } catch (error) {
    if (envFile) throw error; // named by the operator: say why it cannot be read
    throw new CliError(
      'no admin token: pass --admin-token, set LIBOS_ADMIN_TOKEN_FILE (or LIBOS_ADMIN_TOKEN), or run `libos up` here first',
    );
  }
  resolution.tokenSource = envFile ? `LIBOS_ADMIN_TOKEN_FILE (${shownPath(file)})` : shownPath(file);
  if (!token) throw new CliError(`the admin token file ${shownPath(file)} is empty`);
  return token;
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
