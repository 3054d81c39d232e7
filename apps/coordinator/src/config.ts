import { z } from 'zod';

const int = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** The coordinator's settings, from the environment (names of design/system.md where it fixes them). */
export const coordinatorConfigSchema = z.object({
  LIBOS_REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  LIBOS_PORT: z.coerce.number().int().min(0).max(65_535).default(7070),
  LIBOS_HOST: z.string().default('127.0.0.1'),
  LIBOS_ADMIN_TOKEN: z.string().min(16, 'LIBOS_ADMIN_TOKEN must be at least 16 characters'),
  /** How long a blocking wait or receive holds one HTTP request before answering `ready: false`. */
  LIBOS_LONG_POLL_MS: int(25_000),
  /** How often the reaper looks for expired leases and launches that never reached the queue. */
  LIBOS_REAPER_INTERVAL_MS: int(2_000),
  /** A runnable process whose job is missing for this long is enqueued again (same job id). */
  LIBOS_RELAUNCH_AFTER_MS: int(10_000),
  LIBOS_BODY_LIMIT_BYTES: int(4 * 1024 * 1024),
  LIBOS_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});
export type CoordinatorConfig = z.infer<typeof coordinatorConfigSchema>;

export function loadCoordinatorConfig(env: NodeJS.ProcessEnv = process.env): CoordinatorConfig {
  const parsed = coordinatorConfigSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`coordinator configuration: ${problems}`);
  }
  return parsed.data;
}
