/** What the outage log writes to (a pino logger is one). */
export interface WarnLog {
  warn(fields: object, message: string): void;
  warn(message: string): void;
}

/**
 * Redis connection errors as state changes, for all of a part's clients together: one line when
 * Redis becomes unreachable, at most one every `everyMs` while it stays so (with how many errors
 * it stands for), one when it is back. Not one line per retry per client. Wire each client's
 * `error` to `error` and its `ready` to `ready`.
 */
export function redisOutageLog(
  logger: WarnLog,
  describe: (error: unknown) => string,
  everyMs = 30_000,
  onChange: (down: boolean) => void = () => undefined,
): { error: (error: unknown) => void; ready: () => void } {
  let down = false;
  let loggedAt = 0;
  let unlogged = 0;
  return {
    error(error) {
      const now = Date.now();
      if (down && now - loggedAt < everyMs) {
        unlogged++;
        return;
      }
      logger.warn(
        { err: describe(error), ...(down ? { errors_since_last_line: unlogged + 1 } : {}) },
        down ? 'redis still unreachable: retrying' : 'redis unreachable: retrying',
      );
      if (!down) onChange(true);
      down = true;
      loggedAt = now;
      unlogged = 0;
    },
    ready() {
      if (!down) return;
      down = false;
      logger.warn('redis reachable again');
      onChange(false);
    },
  };
}
