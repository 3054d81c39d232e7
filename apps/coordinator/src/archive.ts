import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { ArchiveRecord, ArchiveSink } from '@libos/kernel';

/**
 * The archive sink of `LIBOS_ARCHIVE_DIR`: each batch of summaries is appended to the JSONL file
 * of the day (UTC, `<dir>/<YYYY-MM-DD>.jsonl`) in one write and fsynced before the sweep deletes
 * the processes, so accounting survives retention. One line per process; O_APPEND keeps lines of
 * coordinators sharing the directory whole.
 */
export function jsonlArchive(dir: string): ArchiveSink {
  return async (records: ArchiveRecord[]) => {
    const byDay = new Map<string, string[]>();
    for (const record of records) {
      const day = record.archived_at.slice(0, 10);
      const lines = byDay.get(day) ?? [];
      lines.push(JSON.stringify(record));
      byDay.set(day, lines);
    }
    await mkdir(dir, { recursive: true, mode: 0o700 });
    for (const [day, lines] of byDay) {
      const file = await open(join(dir, `${day}.jsonl`), 'a', 0o600);
      try {
        await file.write(`${lines.join('\n')}\n`);
        await file.datasync();
      } finally {
        await file.close();
      }
    }
  };
}
