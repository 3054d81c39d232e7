import { useEffect, useRef } from 'preact/hooks';

export interface Change {
  pid: string;
  gen: number;
  status: string;
}

/**
 * Follows `/v1/admin/processes/{pid}/events`: `reload` runs when the stream is subscribed (and
 * again after every reconnect or resync, when changes may have been missed), `changed` with each
 * batch of row changes. The browser's EventSource reconnects by itself.
 */
export function useSubtreeEvents(
  url: string | undefined,
  handlers: { reload: () => void; changed: (changes: Change[]) => void },
): void {
  const latest = useRef(handlers);
  latest.current = handlers;
  useEffect(() => {
    if (!url) return;
    const source = new EventSource(url);
    const reload = () => latest.current.reload();
    source.addEventListener('ready', reload);
    source.addEventListener('resync', reload);
    source.addEventListener('changes', (event) => {
      const { changes } = JSON.parse((event as MessageEvent<string>).data) as { changes: Change[] };
      latest.current.changed(changes);
    });
    return () => source.close();
  }, [url]);
}

/** Calls `run` at most once per `ms`, trailing: a burst of events costs one read. */
export function throttle(run: () => void, ms: number): { (): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let last = 0;
  const fire = () => {
    timer = undefined;
    last = Date.now();
    run();
  };
  const schedule = () => {
    if (timer) return;
    timer = setTimeout(fire, Math.max(0, last + ms - Date.now()));
  };
  schedule.cancel = () => clearTimeout(timer);
  return schedule;
}
