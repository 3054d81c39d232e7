import { appendFile, readFile, rename, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { JournalCorrupted } from '../errors.js';
import { decodeJournalLine, encodeJournalLine } from './codec.js';
import type { JournalEntry } from './entry.js';
import { type Journal, ReplayJournal } from './journal.js';

const NEWLINE = 0x0a;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The in-process mutex of each journal file: appends chain on the path's last write, so lines
 * are whole and in call order even when several journal values share a path.
 */
const tails = new Map<string, Promise<void>>();

function appendLine(path: string, line: string): Promise<void> {
  const key = resolve(path);
  const write = (tails.get(key) ?? Promise.resolve()).then(() => appendFile(path, line));
  const tail = write.then(
    () => {},
    () => {},
  );
  tails.set(key, tail);
  void tail.then(() => {
    if (tails.get(key) === tail) tails.delete(key);
  });
  return write;
}

class FileJournal extends ReplayJournal {
  constructor(
    readonly path: string,
    prior: readonly JournalEntry[],
  ) {
    super(prior);
  }

  protected store(entry: JournalEntry): Promise<void> {
    return appendLine(this.path, encodeJournalLine(entry));
  }
}

async function readBytes(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** The bytes of one line, decoded: `undefined` for a blank line, else an entry or metadata. */
function decodeSegment(bytes: Buffer): JournalEntry | 'metadata' | undefined {
  const text = utf8.decode(bytes).trim();
  return text === '' ? undefined : decodeJournalLine(text);
}

/**
 * Open a JSONL journal for resuming a stopped writer (one writing process per path). A missing
 * file is empty (the first append creates it). The file is split at `\n` before UTF-8 decoding,
 * so a tail torn mid-codepoint cannot poison earlier lines. A last line that does not decode, or
 * is not newline-terminated, is a torn tail: it is dropped (or kept and terminated, if it
 * decodes) and the file is repaired through `<path>.repair` and a rename. A bad line anywhere
 * else raises `JournalCorrupted` with its 1-based line number.
 */
export async function fileJournal(path: string): Promise<Journal> {
  const bytes = await readBytes(path);
  if (bytes === undefined) return new FileJournal(path, []);
  const entries: JournalEntry[] = [];
  let start = 0;
  let line = 0;
  let keep = bytes.length;
  while (start <= bytes.length) {
    line += 1;
    const newline = bytes.indexOf(NEWLINE, start);
    const end = newline === -1 ? bytes.length : newline;
    const last = newline === -1;
    try {
      const decoded = decodeSegment(bytes.subarray(start, end));
      if (decoded !== undefined && decoded !== 'metadata') entries.push(decoded);
    } catch (error) {
      if (!last) throw new JournalCorrupted(path, line, { cause: error });
      keep = start;
    }
    if (last) break;
    start = newline + 1;
  }
  if (keep < bytes.length || (bytes.length > 0 && bytes[bytes.length - 1] !== NEWLINE)) {
    await repair(path, bytes.subarray(0, keep));
  }
  return new FileJournal(path, entries);
}

async function repair(path: string, kept: Buffer): Promise<void> {
  const terminated = kept.length === 0 || kept[kept.length - 1] === NEWLINE;
  const scratch = `${path}.repair`;
  await writeFile(scratch, terminated ? kept : Buffer.concat([kept, Buffer.from('\n')]));
  await rename(scratch, path);
}
