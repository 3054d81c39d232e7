import type { RedisClient } from './create.js';

/** What `connectionLost` writes to (a pino logger is one). */
export interface ErrorLog {
  error(message: string): void;
}

/**
 * Resolves, with the reason, when one of `clients` ends while `closing()` is false: ioredis then
 * never reconnects, and every command fails with "Connection is closed." for as long as the
 * process lives. A part in that state can take work it will never report: this logs that `part`
 * cannot go on, and its owner should exit non-zero, so that a supervisor starts it afresh, as
 * after a crash. The parts reconnect for ever by design, so this is a safety net for a client
 * library that gives up (as ioredis 5.11's Sentinel client did in a failover, see
 * `FailoverSafeSentinelConnector`), not a retry policy.
 */
export function connectionLost(
  clients: Readonly<Record<string, RedisClient>>,
  closing: () => boolean,
  log: ErrorLog,
  part: string,
): Promise<string> {
  return new Promise((resolve) => {
    for (const [name, client] of Object.entries(clients)) {
      client.once('end', () => {
        if (closing()) return;
        const reason = `its Redis connection for ${name} ended and will not reconnect`;
        log.error(`the ${part} cannot go on: ${reason}`);
        resolve(reason);
      });
    }
  });
}
