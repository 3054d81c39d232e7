import { createHash, randomBytes } from 'node:crypto';
import { PID_PATTERN } from '@libos/protocol';

/** A process token is `<pid>.<secret>`: 256 random bits, base64url (no dots). */
export function mintToken(pid: string): { token: string; tokenHash: string } {
  const secret = randomBytes(32).toString('base64url');
  return { token: `${pid}.${secret}`, tokenHash: hashSecret(secret) };
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function parseToken(token: string): { pid: string; secret: string } | undefined {
  const dot = token.lastIndexOf('.');
  if (dot <= 0) return undefined;
  const pid = token.slice(0, dot);
  const secret = token.slice(dot + 1);
  if (!PID_PATTERN.test(pid) || !/^[A-Za-z0-9_-]{16,128}$/.test(secret)) return undefined;
  return { pid, secret };
}

/** A root pid: `p` and 10 base36 characters (~51 bits). */
export function newRootPid(): string {
  const bytes = randomBytes(10);
  let out = 'p';
  for (const byte of bytes) out += (byte % 36).toString(36);
  return out;
}

/** A fencing token for one claimed attempt. */
export function newFence(): string {
  return randomBytes(16).toString('hex');
}
