import { randomBytes } from 'node:crypto';

/** A key prefix that keeps tests apart when they share one Redis (LIBOS_TEST_REDIS_URL). */
export function uniquePrefix(label = 't'): string {
  return `${label}-${randomBytes(4).toString('hex')}:`;
}
