import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';

/** What `libos up` leaves in its state directory for the other commands to find the cluster. */
export const clusterFileSchema = z.object({
  url: z.url(),
  redis_url: z.string(),
  admin_token_file: z.string(),
  pid: z.number().int(),
  started_at: z.string(),
});
export type ClusterFile = z.infer<typeof clusterFileSchema>;

export function stateDir(dir = process.env.LIBOS_HOME ?? '.libos'): string {
  return resolve(dir);
}

/** The admin token of an embedded cluster: LIBOS_ADMIN_TOKEN, else `.libos/admin-token`, made once. */
export async function ensureAdminToken(dir: string): Promise<{ token: string; file: string }> {
  const file = join(dir, 'admin-token');
  const fromEnv = process.env.LIBOS_ADMIN_TOKEN;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (fromEnv) {
    await writeFile(file, `${fromEnv}\n`, { mode: 0o600 });
    return { token: fromEnv, file };
  }
  try {
    const existing = (await readFile(file, 'utf8')).trim();
    if (existing.length >= 32) return { token: existing, file };
  } catch {}
  const token = randomBytes(32).toString('base64url');
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  return { token, file };
}

export async function writeClusterFile(dir: string, cluster: ClusterFile): Promise<void> {
  await writeFile(join(dir, 'cluster.json'), `${JSON.stringify(cluster, null, 2)}\n`, { mode: 0o600 });
}

export async function readClusterFile(dir: string): Promise<ClusterFile | undefined> {
  try {
    const parsed = clusterFileSchema.safeParse(JSON.parse(await readFile(join(dir, 'cluster.json'), 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
