import { errorEnvelopeSchema } from '@libos/protocol';
import { z } from 'zod';

export interface RawAnswer {
  status: number;
  /** The parsed JSON body, or the text when it is not JSON. */
  body: unknown;
  headers: Headers;
}

/**
 * One HTTP request exactly as given (no client-side retries or validation), for tests of what
 * the coordinator refuses. `auth` is the whole Authorization header, or none.
 */
export async function rawRequest(
  url: string,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  options: { auth?: string; body?: unknown } = {},
): Promise<RawAnswer> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      ...(options.auth === undefined ? {} : { authorization: options.auth }),
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body, headers: response.headers };
}

export const bearer = (token: string) => `Bearer ${token}`;

/** The `{code, reason}` of an error envelope, or undefined when the body is not one. */
export function refusalOf(answer: RawAnswer): { code: string; reason: string | undefined } | undefined {
  const parsed = errorEnvelopeSchema.safeParse(answer.body);
  if (!parsed.success) return undefined;
  const reason = z.object({ reason: z.string() }).safeParse(parsed.data.error.details);
  return { code: parsed.data.error.code, reason: reason.success ? reason.data.reason : undefined };
}
