import { killAllParts } from './redis-server.js';

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * The stop signals for the whole life of `libos up`: the first resolves `first` (a graceful
 * stop); any later one, or one while the cluster is still starting, SIGKILLs every part's
 * process group at once and exits, so no coordinator, worker or redis-server outlives the CLI.
 */
export function stopSignals(): { first: Promise<NodeJS.Signals>; up(): void } {
  let count = 0;
  let started = false;
  let resolveFirst: (signal: NodeJS.Signals) => void = () => undefined;
  const first = new Promise<NodeJS.Signals>((resolve) => {
    resolveFirst = resolve;
  });
  const onSignal = (signal: NodeJS.Signals) => {
    count++;
    if (count === 1 && started) return resolveFirst(signal);
    process.stderr.write(
      started
        ? `${signal} again: killing every part now\n`
        : `${signal} while starting: killing every part\n`,
    );
    killAllParts();
    process.exit(130);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  return {
    first,
    up() {
      started = true;
    },
  };
}
