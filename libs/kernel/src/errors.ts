import {
  type ErrorCode,
  type ErrorDetails,
  type ErrorEnvelope,
  errorCodeSchema,
  errorDetailsSchema,
  errorEnvelope,
} from '@libos/protocol';
import { z } from 'zod';

/** Every refusal of the kernel: a public error code, a message and `details.reason` where useful. */
export class KernelError extends Error {
  override readonly name = 'KernelError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
  ) {
    super(message);
  }

  get reason(): string | undefined {
    return this.details?.reason;
  }

  toEnvelope(): ErrorEnvelope {
    return errorEnvelope(this.code, this.message, this.details);
  }
}

/** Zod failures at the kernel's boundary are `invalid_argument` and change nothing. */
export function fromZod(what: string, error: z.ZodError): KernelError {
  const issues = error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
  const first = issues[0];
  const where = first ? `${first.path || '(root)'}: ${first.message}` : 'invalid';
  return new KernelError('invalid_argument', `${what}: ${where}`, { issues });
}

export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw fromZod(what, parsed.error);
  return parsed.data;
}

const scriptErrorSchema = z.object({
  code: errorCodeSchema,
  reason: z.string().optional(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional().or(z.array(z.unknown())),
});

/**
 * Scripts refuse with an error reply `LIBOS {json}` (Redis may append where the script failed).
 * Anything else from Redis is a connection problem (`unavailable`) or a bug (`internal`).
 */
export function fromRedisError(error: unknown): KernelError {
  if (error instanceof KernelError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const match = /^LIBOS (\{.*\})(?: script: .*)?$/s.exec(message);
  if (match?.[1]) {
    const parsed = scriptErrorSchema.safeParse(JSON.parse(match[1]));
    if (parsed.success) {
      const extra = Array.isArray(parsed.data.details) ? {} : (parsed.data.details ?? {});
      const details = errorDetailsSchema.safeParse({
        ...extra,
        ...(parsed.data.reason ? { reason: parsed.data.reason } : {}),
      });
      const hasDetails = details.success && Object.keys(details.data).length > 0;
      return new KernelError(parsed.data.code, parsed.data.message, hasDetails ? details.data : undefined);
    }
  }
  // Redis at maxmemory with noeviction refuses a script's first write: a script that began over
  // the limit writes nothing (every script checks before it writes), so this is a clean refusal.
  if (/^OOM /.test(message)) {
    return new KernelError(
      'unavailable',
      'Redis is at its maxmemory (noeviction): nothing was written; retry once finished work is released',
      { reason: 'redis_memory' },
    );
  }
  // A primary with fewer good replicas than its min-replicas-to-write refuses a script's first
  // write (nothing written); a demoted primary answers READONLY (the client reconnects to the one
  // the sentinels name).
  if (/^NOREPLICAS\b/.test(message)) {
    return new KernelError(
      'unavailable',
      'the Redis primary has fewer replicas than its min-replicas-to-write: nothing was written; retry',
      { reason: 'replication' },
    );
  }
  if (/^READONLY\b/.test(message)) {
    return new KernelError(
      'unavailable',
      `redis is unavailable (a replica answered, not the primary): ${message}`,
    );
  }
  if (
    /ECONNREFUSED|ECONNRESET|Connection is closed|max retries|LOADING|ETIMEDOUT|EPIPE|Stream isn't writeable/i.test(
      message,
    )
  ) {
    return new KernelError('unavailable', `redis is unavailable: ${message}`);
  }
  return new KernelError('internal', message);
}
