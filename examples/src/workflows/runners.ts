import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RESULT_FILE_PLACEHOLDER } from '@libos/contract';
import { AdminClient, clusterRunner, contractRunner, fromEnv, ProcessClient, type Runner } from '@libos/sdk';
import { z } from 'zod';
import { ANSWER_KIND } from './answers.js';

const fromSource = import.meta.url.endsWith('.ts');

/** The answer child, from source through tsx or built, however this module itself runs. */
export function answerChildLaunch(): { command: string; args: string[] } {
  const child = fileURLToPath(new URL(`./answer-child.${fromSource ? 'ts' : 'js'}`, import.meta.url));
  const loader = fromSource ? ['--import', import.meta.resolve('tsx'), '--conditions=@libos/source'] : [];
  return { command: process.execPath, args: [...loader, child, RESULT_FILE_PLACEHOLDER] };
}

/** `--local`: every call is a child process of this program, under the contract. */
export function localRunner(): Runner {
  const launch = answerChildLaunch();
  return contractRunner({ launch: () => launch, deadlineMs: 60_000 });
}

/** Where the cluster is and who this program acts as there. */
export interface ClusterTarget {
  runner: Runner;
  /** A root this program drives (ended with `process_exit` when done), or the child it runs in. */
  process: ProcessClient;
  pid: string;
  /** True when this program made its root and must end it. */
  ownsRoot: boolean;
}

const clusterFileSchema = z.object({ url: z.url() });

/**
 * `--cluster`: inside a launched child (`LIBOS_URL`, `LIBOS_PID`, `LIBOS_TOKEN` set) the calls
 * become that child's children; otherwise, with the admin token (`LIBOS_ADMIN_TOKEN` or the
 * `admin-token` file `libos up` writes), it registers the answer image and makes a root.
 */
export async function clusterTarget(options: { url?: string } = {}): Promise<ClusterTarget> {
  if (process.env.LIBOS_PID && process.env.LIBOS_TOKEN) {
    const me = fromEnv();
    return { runner: clusterRunner({ client: me }), process: me, pid: me.pid, ownsRoot: false };
  }
  const dir = resolve(process.env.LIBOS_HOME ?? '.libos');
  const url = options.url ?? process.env.LIBOS_URL ?? (await clusterUrl(dir));
  const admin = new AdminClient({ url, adminToken: await adminToken(dir) });
  const launch = answerChildLaunch();
  // The image names absolute paths on this host: right for `libos up`; a fleet needs them on every worker.
  await admin.putImage(ANSWER_KIND, {
    ...launch,
    kind: ANSWER_KIND,
    deadline_ms: 60_000,
    cancel_grace_ms: 2_000,
  });
  const root = await admin.createProcess({ goal: 'example workflow: answers' });
  if (root.token === null) throw new Error('the coordinator made a root without a token');
  const client = new ProcessClient({ url, token: root.token });
  return { runner: clusterRunner({ client }), process: client, pid: root.pid, ownsRoot: true };
}

async function clusterUrl(dir: string): Promise<string> {
  try {
    const file = clusterFileSchema.safeParse(JSON.parse(await readFile(join(dir, 'cluster.json'), 'utf8')));
    if (file.success) return file.data.url;
  } catch {}
  return `http://127.0.0.1:${process.env.LIBOS_PORT ?? 7070}`;
}

async function adminToken(dir: string): Promise<string> {
  if (process.env.LIBOS_ADMIN_TOKEN) return process.env.LIBOS_ADMIN_TOKEN;
  try {
    return (await readFile(join(dir, 'admin-token'), 'utf8')).trim();
  } catch {
    throw new Error(
      `no admin token: set LIBOS_ADMIN_TOKEN or run \`libos up\` here first (it writes ${join(dir, 'admin-token')})`,
    );
  }
}
