import { relative } from 'node:path';
import { LibosError } from '@libos/sdk';
import type { z } from 'zod';

/** An error whose message is already the one line the operator should read. */
export class CliError extends Error {
  override readonly name = 'CliError';
}

/** Where the CLI took the coordinator's URL and the credentials from, for the error line. */
export interface Resolution {
  url?: string;
  /** e.g. `--url`, `LIBOS_URL`, `.libos/cluster.json` */
  urlSource?: string;
  /** Which credential the failing command presented. */
  role?: 'admin' | 'process';
  /** e.g. `--admin-token`, `LIBOS_ADMIN_TOKEN`, `.libos/admin-token` */
  tokenSource?: string;
}

/** Filled in by `context.ts` as a command resolves its client. */
export const resolution: Resolution = {};

/** A path as the operator would type it: relative to the working directory when inside it. */
export function shownPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') ? rel : path;
}

/** `what "value" is not one of: a, b, c` instead of zod's issue array. */
export function parseChoice<T extends string>(
  what: string,
  schema: z.ZodType<T> & { options: readonly T[] },
  value: string,
): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new CliError(`unknown ${what} "${value}": use one of ${schema.options.join(', ')}`);
}

interface ZodLike {
  name: string;
  issues: { path: PropertyKey[]; message: string }[];
}

/** Any zod version's error (instanceof fails across copies of zod). */
function isZodError(error: unknown): error is ZodLike {
  return (
    error instanceof Error && error.name === 'ZodError' && Array.isArray((error as Partial<ZodLike>).issues)
  );
}

function zodLine(error: ZodLike): string {
  return error.issues
    .map((issue) =>
      issue.path.length ? `${issue.path.map(String).join('.')}: ${issue.message}` : issue.message,
    )
    .join('; ');
}

/** A `cluster.json` names a cluster that is gone (its `libos up` stopped, or never answers). */
export function noClusterLine(url: string, source: string): string {
  return `no cluster at ${url} (from ${source}): start one with \`libos up\`, or point --url / LIBOS_URL at a running coordinator`;
}

function libosLine(error: LibosError, where: Resolution): string {
  const from = where.urlSource ? ` (from ${where.urlSource})` : '';
  const token = where.tokenSource ? ` (from ${where.tokenSource})` : '';
  switch (error.code) {
    case 'transport':
      if (where.urlSource?.endsWith('cluster.json')) return noClusterLine(where.url ?? '', where.urlSource);
      return `cannot reach the coordinator at ${where.url ?? 'its URL'}${from}: start one with \`libos up\`, or point --url / LIBOS_URL at a running one`;
    case 'unavailable':
      return `the coordinator at ${where.url}${from} is unavailable (${error.message}): try again shortly`;
    case 'unauthenticated':
      return where.role === 'admin'
        ? `the coordinator wants an admin token${token}: pass --admin-token or set LIBOS_ADMIN_TOKEN_FILE (or LIBOS_ADMIN_TOKEN)`
        : `the process token was refused${token} (${error.message}): pass a live process's token with --token or LIBOS_TOKEN`;
    case 'permission_denied':
      if (where.role === 'admin')
        return `wrong admin token${token}: the coordinator at ${where.url} does not accept it; pass its admin token with --admin-token, LIBOS_ADMIN_TOKEN_FILE or LIBOS_ADMIN_TOKEN (\`libos up\` keeps it in .libos/admin-token)`;
      return `permission denied: ${error.message}${error.reason ? ` (${error.reason})` : ''}`;
    case 'not_found':
      return `not found: ${error.message}`;
    case 'invalid_argument':
      return `invalid request: ${error.message}${error.reason ? ` (${error.reason})` : ''}`;
    default:
      return `${error.message}${error.reason ? ` (${error.reason})` : ''}`;
  }
}

/** One line for any error: no stack, no issue array, no newlines. */
export function errorLine(error: unknown, where: Resolution = resolution): string {
  let line: string;
  if (error instanceof CliError) line = error.message;
  else if (error instanceof LibosError) line = libosLine(error, where);
  else if (isZodError(error)) line = `invalid input: ${zodLine(error)}`;
  else if (error instanceof SyntaxError) line = `not valid JSON: ${error.message}`;
  else if (error instanceof Error) {
    const { code, path } = error as NodeJS.ErrnoException;
    const why: Record<string, string> = {
      ENOENT: 'no such file or directory',
      EACCES: 'permission denied',
      EISDIR: 'it is a directory',
      ENOTDIR: 'a part of the path is not a directory',
    };
    line =
      code && path && why[code]
        ? `cannot read ${shownPath(path)}: ${why[code]}`
        : error.message || error.name;
  } else line = String(error);
  return line.replace(/\s*\n\s*/g, ' ').trim();
}

/** Prints `libos: <one line>` (and the stack with LIBOS_DEBUG=1) and sets a failing exit code. */
export function fail(error: unknown): void {
  process.stderr.write(`libos: ${errorLine(error)}\n`);
  if (process.env.LIBOS_DEBUG && error instanceof Error && error.stack)
    process.stderr.write(`${error.stack}\n`);
  process.exitCode = process.exitCode || 1;
}
