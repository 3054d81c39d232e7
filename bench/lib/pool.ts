/** Runs `task(0..count-1)` with at most `concurrency` in flight; the results in index order. */
export async function runPool<T>(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<T>,
): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const i = next++;
        out[i] = await task(i);
      }
    }),
  );
  return out;
}

/** The Markdown row of `cells`. */
export const mdRow = (cells: readonly (string | number)[]) => `| ${cells.join(' | ')} |`;
