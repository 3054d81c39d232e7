// Order statistics of the benches' samples.

/** The value at fraction `q` (0.5 the median, 0.99 the p99) of `values` by nearest rank; NaN when there are none. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** How many, their mean, p50 and p99. */
export function summarize(values: readonly number[]): { n: number; mean: number; p50: number; p99: number } {
  return {
    n: values.length,
    mean: values.reduce((a, b) => a + b, 0) / values.length,
    p50: quantile(values, 0.5),
    p99: quantile(values, 0.99),
  };
}
