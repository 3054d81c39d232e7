import { type ErrorCode, type ErrorDetails, errorEnvelopeSchema, type Notice } from '@libos/protocol';

/** A refusal or failure answered by the coordinator, typed by its code and reason. */
export class LibosError extends Error {
  override readonly name = 'LibosError';
  constructor(
    readonly code: ErrorCode | 'transport',
    message: string,
    readonly status: number,
    readonly details?: ErrorDetails,
    /** Mailbox notices due to the caller, carried by a refused tool call (`error.notices`). */
    readonly notices: Notice[] = [],
  ) {
    super(message);
  }

  get reason(): string | undefined {
    return this.details?.reason;
  }
}

/** Turns an HTTP error answer into a LibosError; an answer that is not an envelope is `internal`. */
export function errorFromResponse(status: number, body: unknown): LibosError {
  const parsed = errorEnvelopeSchema.safeParse(body);
  if (parsed.success) {
    const { code, message, details, notices } = parsed.data.error;
    return new LibosError(code, message, status, details, notices ?? []);
  }
  // A proxy, or a coordinator shutting down, answers 502/503/504 in its own words: ask again.
  const code = status === 502 || status === 503 || status === 504 ? 'unavailable' : 'internal';
  return new LibosError(code, `the coordinator answered ${status} without an error envelope`, status);
}
