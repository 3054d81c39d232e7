import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The cancellation scope of the current task. Combinators run each thunk inside their group's
 * signal, so agent calls made in a thunk are cancelled with their siblings without the caller
 * threading the signal by hand (the task-group semantics of the reference).
 */
const ambient = new AsyncLocalStorage<AbortSignal>();

export function currentSignal(): AbortSignal | undefined {
  return ambient.getStore();
}

export function withSignal<T>(signal: AbortSignal, body: () => Promise<T>): Promise<T> {
  return ambient.run(signal, body);
}

/** The explicit signal joined with the ambient one: either aborting cancels. */
export function effectiveSignal(explicit?: AbortSignal): AbortSignal | undefined {
  const scope = ambient.getStore();
  if (explicit === undefined) return scope;
  if (scope === undefined || scope === explicit) return explicit;
  return AbortSignal.any([explicit, scope]);
}

export function isAbortError(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

/** The error a cancelled operation rejects with: the signal's reason when it is an error. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
