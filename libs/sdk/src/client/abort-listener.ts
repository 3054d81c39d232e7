import { defaultMaxListeners, getMaxListeners, setMaxListeners } from 'node:events';

/**
 * Lets `signal` take any number of abort listeners. A caller's signal is often shared by many
 * operations at once (a workflow's cancellation, every waiter of a `parallel` past its
 * concurrency, every request of a fan-out and its retry pauses), each listening until it settles,
 * so past Node's default of 10 Node would warn of a leak that is not one. Only a signal still at
 * that default is changed (as undici's fetch raises it for the signals it is given); a limit the
 * caller set is left alone.
 */
export function shareSignal(signal: AbortSignal | undefined): void {
  if (!signal) return;
  let limit: number;
  try {
    limit = getMaxListeners(signal);
  } catch {
    return; // Node 20's getMaxListeners throws for a limit of 0 (none), and for a foreign signal
  }
  if (limit === defaultMaxListeners) setMaxListeners(0, signal);
}

/** Calls `listener` once when `signal` aborts; returns what stops listening (call it on settling). */
export function onAbort(signal: AbortSignal | undefined, listener: () => void): () => void {
  if (!signal) return () => undefined;
  shareSignal(signal);
  signal.addEventListener('abort', listener, { once: true });
  return () => signal.removeEventListener('abort', listener);
}
