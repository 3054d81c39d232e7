/** Resolves when `work` settles or after `ms`, whichever is first (a bounded wait on stop). */
export async function atMost(work: Promise<unknown> | undefined, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/**
 * How long a background loop's `stop` waits for its work in flight. With Redis away that work
 * retries for seconds; nothing is lost by not waiting (the reaper's and the retention sweep's
 * steps are idempotent, and a shard hold not released expires on its own).
 */
export const STOP_WAIT_MS = 500;
