// Reading V8's `--trace-gc-nvp` lines (set in a part by lib/gc-trace.mjs, or by the process itself),
// for bench/gc-pauses.ts and bench/queue-gc.ts.

/** One collection as `--trace-gc-nvp` prints it: `... pause=1.2 ... gc=s ... promoted=123 ...`. */
export interface Collection {
  kind: 'scavenge' | 'full';
  pauseMs: number;
  /** Bytes moved to the old generation. */
  promoted: number;
}

/** Every collection a log holds, in order; other lines are skipped. */
export function collections(log: string): Collection[] {
  const found: Collection[] = [];
  for (const line of log.split('\n')) {
    const gc = / gc=(\w+) /.exec(line)?.[1];
    if (gc === undefined) continue;
    const number = (name: string) => Number(new RegExp(` ${name}=([\\d.]+)`).exec(line)?.[1] ?? 0);
    found.push({
      kind: gc === 's' ? 'scavenge' : 'full',
      pauseMs: number('pause'),
      promoted: number('promoted'),
    });
  }
  return found;
}
