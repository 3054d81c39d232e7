import { abortReason, currentSignal, withSignal } from './cancellation.js';
import { QuorumNotReached, WorkflowError } from './errors.js';

/** A workflow step's result: its value, or the typed workflow error it failed with. */
export type Result<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: WorkflowError };

/** A unit of concurrent work. Agent calls inside it inherit `signal`; pass it to anything else you await. */
export type Thunk<T> = (signal: AbortSignal) => Promise<T>;

export interface GroupOptions {
  /** Cancels the whole group (joined with the enclosing group's signal, if any). */
  readonly signal?: AbortSignal;
}

/**
 * Run thunks as one task group. A thunk that rejects with an error `isFatal` accepts cancels
 * its siblings; the group waits for every thunk to settle (so cancelled siblings close their
 * event brackets and tear down their children) and then rejects with that first error.
 */
async function runGroup<T>(
  thunks: readonly Thunk<T>[],
  isFatal: (error: unknown) => boolean,
  options: GroupOptions,
): Promise<PromiseSettledResult<T>[]> {
  const group = new AbortController();
  const parents = [options.signal, currentSignal()].filter((s): s is AbortSignal => s !== undefined);
  const signal = AbortSignal.any([group.signal, ...parents]);
  signal.throwIfAborted();
  let fatal: { error: unknown } | undefined;
  const settled = await Promise.allSettled(
    thunks.map((thunk) =>
      withSignal(signal, async () => thunk(signal)).catch((error: unknown) => {
        if (fatal === undefined && isFatal(error)) {
          fatal = { error };
          group.abort();
        }
        throw error;
      }),
    ),
  );
  // An outer cancellation wins over a sibling's reaction to it.
  for (const parent of parents) if (parent.aborted) throw abortReason(parent);
  if (fatal !== undefined) throw fatal.error;
  return settled;
}

function toResult<T>(settled: PromiseSettledResult<T>): Result<T> {
  if (settled.status === 'fulfilled') return { ok: true, value: settled.value };
  return { ok: false, error: settled.reason as WorkflowError };
}

/**
 * Run thunks concurrently; one `Result` per thunk, in input order. Workflow errors become
 * `Err`s; any other rejection (an engine bug, cancellation) cancels the siblings and propagates.
 */
export async function parallel<T>(
  thunks: readonly Thunk<T>[],
  options: GroupOptions = {},
): Promise<Result<T>[]> {
  const settled = await runGroup(thunks, (error) => !(error instanceof WorkflowError), options);
  return settled.map(toResult);
}

/** Fail-fast: the first rejection of any kind cancels the siblings still in flight and propagates. */
export async function parallelAll<T>(thunks: readonly Thunk<T>[], options: GroupOptions = {}): Promise<T[]> {
  const settled = await runGroup(thunks, () => true, options);
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

/** `parallel` over items: one `Result` per item, in input order. */
export function fanOut<I, T>(
  items: readonly I[],
  run: (item: I, signal: AbortSignal, index: number) => Promise<T>,
  options: GroupOptions = {},
): Promise<Result<T>[]> {
  return parallel(
    items.map((item, index) => (signal: AbortSignal) => run(item, signal, index)),
    options,
  );
}

/** Fold the workflow's typed errors into an `Err`; anything else (cancellation, bugs) re-raises. */
export async function attempt<T>(step: () => Promise<T>): Promise<Result<T>> {
  try {
    return { ok: true, value: await step() };
  } catch (error) {
    if (error instanceof WorkflowError) return { ok: false, error };
    throw error;
  }
}

/** All values, or throw the first `Err` in array order. */
export function allOk<T>(results: readonly Result<T>[]): T[] {
  return results.map((r) => {
    if (!r.ok) throw r.error;
    return r.value;
  });
}

/** The successes; `QuorumNotReached` if there are fewer than `minOk` (a negative `minOk` is 0). */
export function collectOk<T>(results: readonly Result<T>[], minOk = 0): T[] {
  const values = results.flatMap((r) => (r.ok ? [r.value] : []));
  const need = Math.max(0, minOk);
  if (values.length < need) throw new QuorumNotReached(need, values.length, results.length);
  return values;
}

/** At least `need` successes (counts them; does not compare answers). */
export function quorum<T>(results: readonly Result<T>[], need: number): T[] {
  return collectOk(results, need);
}
