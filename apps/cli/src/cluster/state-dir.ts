import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';

/** What `libos up` leaves in its state directory for the other commands to find the cluster. */
export const clusterFileSchema = z.object({
  url: z.url(),
  /** Without its password, if the URL had one. */
  redis_url: z.string(),
  /** The private Redis's password (absent with --redis-url). */
  redis_password_file: z.string().optional(),
  admin_token_file: z.string(),
  pid: z.number().int(),
  started_at: z.string(),
});
export type ClusterFile = z.infer<typeof clusterFileSchema>;

export function stateDir(dir = process.env.LIBOS_HOME ?? '.libos'): string {
  return resolve(dir);
}

/** Writes `text` owner-only (0600), also when the file was already there with a wider mode. */
async function writeSecret(file: string, text: string): Promise<void> {
  await writeFile(file, `${text}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
}

/** A secret kept in `file`: the one there (32 characters or more), else 32 new random bytes. */
async function ensureSecret(file: string): Promise<string> {
  try {
    const existing = (await readFile(file, 'utf8')).trim();
    if (existing.length >= 32) {
      await chmod(file, 0o600);
      return existing;
    }
  } catch {}
  const secret = randomBytes(32).toString('base64url');
  await writeSecret(file, secret);
  return secret;
}

/** The state directory, owner-only (0700), also when it was already there. */
async function ensureStateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
}

/**
 * The admin token of an embedded cluster: the operator's LIBOS_ADMIN_TOKEN, else the one in
 * `.libos/admin-token`, else a new one; always kept in that file (0600), which is how the
 * coordinator gets it (LIBOS_ADMIN_TOKEN_FILE), never through its environment.
 */
export async function ensureAdminToken(
  dir: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ token: string; file: string }> {
  const file = join(dir, 'admin-token');
  await ensureStateDir(dir);
  const fromEnv = env.LIBOS_ADMIN_TOKEN;
  if (fromEnv) {
    await writeSecret(file, fromEnv);
    return { token: fromEnv, file };
  }
  return { token: await ensureSecret(file), file };
}

/**
 * The private Redis's password, in `.libos/redis-password` (0600): made once (32 random bytes,
 * base64url) and reused across restarts. The parts get the file's path
 * (LIBOS_REDIS_PASSWORD_FILE), never the password in their environment.
 */
export async function ensureRedisPassword(dir: string): Promise<{ password: string; file: string }> {
  await ensureStateDir(dir);
  const file = join(dir, 'redis-password');
  return { password: await ensureSecret(file), file };
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
