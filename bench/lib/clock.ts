// Times comparable with a child's own stamps (bash's $EPOCHREALTIME, date +%s%N): epoch ns.

/** Now in ns since the epoch: Date.now()'s ms, the sub-ms part from the monotonic clock. */
export const nowNs = () => BigInt(Date.now()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n);

/** ms from one epoch-ns time to another. */
export const msBetween = (fromNs: number | bigint, toNs: bigint) => Number(toNs - BigInt(fromNs)) / 1e6;
