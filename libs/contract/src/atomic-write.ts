import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';

/** 8 random bytes as 16 hex characters; the clock is the fallback if randomness fails. */
function nonce(): string {
  try {
    return randomBytes(8).toString('hex');
  } catch {
    return (BigInt(Date.now()) * 1_000_000n + process.hrtime.bigint())
      .toString(16)
      .slice(-16)
      .padStart(16, '0');
  }
}

/**
 * Writes a result document so a reader sees no file or a whole one: serialize + `\n` into a
 * sibling `<path>.<16 hex>.tmp` created exclusively, then rename it over `path` (replacing a
 * stale file). The sibling is removed if anything fails after it exists.
 */
export async function writeResultAtomic(path: string, doc: object): Promise<void> {
  const text = `${JSON.stringify(doc)}\n`;
  const sibling = `${path}.${nonce()}.tmp`;
  const handle = await open(sibling, 'wx');
  try {
    try {
      await handle.writeFile(text, 'utf8');
    } finally {
      await handle.close();
    }
    await rename(sibling, path);
  } catch (error) {
    await rm(sibling, { force: true }).catch(() => undefined);
    throw error;
  }
}
