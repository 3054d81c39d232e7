import { readFile } from 'node:fs/promises';
import { AdminClient, ProcessClient } from '@libos/sdk';
import { readClusterFile, stateDir } from './cluster/state-dir.js';

export interface GlobalOptions {
  url?: string;
  adminToken?: string;
  token?: string;
  dir?: string;
  json?: boolean;
}

/** The coordinator URL: --url, LIBOS_URL, the running embedded cluster, else the default port. */
export async function coordinatorUrl(options: GlobalOptions): Promise<string> {
  if (options.url) return options.url;
  if (process.env.LIBOS_URL) return process.env.LIBOS_URL;
  const cluster = await readClusterFile(stateDir(options.dir));
  return cluster?.url ?? `http://127.0.0.1:${process.env.LIBOS_PORT ?? 7070}`;
}

export async function adminClient(options: GlobalOptions): Promise<AdminClient> {
  const url = await coordinatorUrl(options);
  let adminToken = options.adminToken ?? process.env.LIBOS_ADMIN_TOKEN;
  if (!adminToken) {
    try {
      adminToken = (await readFile(`${stateDir(options.dir)}/admin-token`, 'utf8')).trim();
    } catch {
      throw new Error(
        'no admin token: pass --admin-token, set LIBOS_ADMIN_TOKEN, or run `libos up` here first',
      );
    }
  }
  return new AdminClient({ url, adminToken });
}

/** Acting as a process: --token or LIBOS_TOKEN (a launched child has it in its environment). */
export async function processClient(options: GlobalOptions): Promise<ProcessClient> {
  const token = options.token ?? process.env.LIBOS_TOKEN;
  if (!token) throw new Error('no process token: pass --token or set LIBOS_TOKEN');
  return new ProcessClient({ url: await coordinatorUrl(options), token });
}
