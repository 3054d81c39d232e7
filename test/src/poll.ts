export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Asks `probe` every `everyMs` until it returns something other than undefined, and returns
 * that; fails naming `what` after `withinMs`. Errors from the probe count as "not yet" (a
 * restarting coordinator or Redis), but the last one is reported on timeout.
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  options: { withinMs?: number; everyMs?: number; what?: string } = {},
): Promise<T> {
  const { withinMs = 15_000, everyMs = 50, what = 'a condition' } = options;
  const until = Date.now() + withinMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > until) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${withinMs} ms waiting for ${what}${cause}`);
    }
    await sleep(everyMs);
  }
}
