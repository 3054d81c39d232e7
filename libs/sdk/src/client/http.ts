import type { z } from 'zod';
import { errorFromResponse, LibosError } from './errors.js';

export interface HttpOptions {
  /** The coordinator's base URL, e.g. http://127.0.0.1:7070 */
  url: string;
  /** A bearer token: a process token or the admin token. */
  token: string;
  /** Override for tests or custom agents. */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  signal?: AbortSignal | undefined;
}

/** One JSON request to the coordinator, its answer validated by `schema`. */
export class Http {
  private readonly base: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: HttpOptions) {
    this.base = options.url.replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? fetch;
  }

  async request<S extends z.ZodType>(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    schema: S,
    body?: unknown,
    options: RequestOptions = {},
  ): Promise<{ data: z.infer<S>; raw: Record<string, unknown> }> {
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.options.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: options.signal,
      });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason ?? error;
      throw new LibosError('transport', `cannot reach ${this.base}: ${describe(error)}`, 0);
    }
    const text = await response.text();
    let json: unknown;
    try {
      json = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      if (!response.ok) throw errorFromResponse(response.status, undefined);
      throw new LibosError(
        'internal',
        `the coordinator answered ${response.status} with non-JSON`,
        response.status,
      );
    }
    if (!response.ok) throw errorFromResponse(response.status, json);
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw new LibosError(
        'internal',
        `unexpected answer from ${path}: ${parsed.error.message}`,
        response.status,
      );
    }
    const raw = typeof json === 'object' && json !== null ? (json as Record<string, unknown>) : {};
    return { data: parsed.data, raw };
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}

/** Transport failures and 503s are worth asking again; a typed refusal is not. */
export function isRetryable(error: unknown): boolean {
  return error instanceof LibosError && (error.code === 'transport' || error.code === 'unavailable');
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
