import { Agent, type Dispatcher, request } from 'undici';
import type { z } from 'zod';
import { onAbort, shareSignal } from './abort-listener.js';
import { errorFromResponse, LibosError } from './errors.js';

export interface HttpOptions {
  /** The coordinator's base URL, e.g. http://127.0.0.1:7070 */
  url: string;
  /** A bearer token: a process token or the admin token. */
  token: string;
  /** The undici dispatcher to send through (a proxy, custom TLS); by default one keep-alive agent per process. */
  dispatcher?: Dispatcher;
}

export interface RequestOptions {
  signal?: AbortSignal | undefined;
  /**
   * Whether asking again is safe (a read): then a request whose coordinator could not be reached
   * or answered 503 (it died mid-request, Redis is failing over) is sent again, up to
   * `IDEMPOTENT_RETRY_DELAYS_MS` (about 4 s in all), to the same address: behind a load balancer,
   * another coordinator. Default: true for GET, false otherwise.
   */
  idempotent?: boolean;
}

/** The pauses between the tries of an idempotent request (so 7 tries over ~3.9 s). */
export const IDEMPOTENT_RETRY_DELAYS_MS = [50, 100, 250, 500, 1000, 2000] as const;

/**
 * Shared by every client of this process, so connections are reused across clients. undici's
 * `request` rather than `fetch`: it costs a fraction of fetch's CPU per call (no WHATWG streams),
 * which matters for a service that spawns and waits on many children.
 */
let sharedAgent: Agent | undefined;
const defaultDispatcher = () => {
  sharedAgent ??= new Agent({ keepAliveTimeout: 30_000 });
  return sharedAgent;
};

/** One JSON request to the coordinator, its answer validated by `schema`. */
export class Http {
  private readonly base: string;
  private readonly dispatcher: Dispatcher;
  private readonly authorization: string;

  constructor(options: HttpOptions) {
    this.base = options.url.replace(/\/+$/, '');
    this.dispatcher = options.dispatcher ?? defaultDispatcher();
    this.authorization = `Bearer ${options.token}`;
  }

  async request<S extends z.ZodType>(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    schema: S,
    body?: unknown,
    options: RequestOptions = {},
  ): Promise<{ data: z.infer<S>; raw: Record<string, unknown> }> {
    if (!(options.idempotent ?? method === 'GET')) return this.once(method, path, schema, body, options);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(method, path, schema, body, options);
      } catch (error) {
        const pause = IDEMPOTENT_RETRY_DELAYS_MS[attempt];
        if (pause === undefined || !isRetryable(error)) throw error;
        await sleep(pause, options.signal);
      }
    }
  }

  private async once<S extends z.ZodType>(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    schema: S,
    body: unknown,
    options: RequestOptions,
  ): Promise<{ data: z.infer<S>; raw: Record<string, unknown> }> {
    let status: number;
    let text: string;
    // undici listens on the signal for the request's life: one listener per call in flight.
    shareSignal(options.signal);
    try {
      const response = await request(`${this.base}${path}`, {
        method,
        dispatcher: this.dispatcher,
        headers:
          body === undefined
            ? { authorization: this.authorization }
            : { authorization: this.authorization, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: options.signal,
      });
      status = response.statusCode;
      text = await response.body.text();
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason ?? error;
      throw new LibosError('transport', `cannot reach ${this.base}: ${describe(error)}`, 0);
    }
    const ok = status >= 200 && status < 300;
    let json: unknown;
    try {
      json = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      if (!ok) throw errorFromResponse(status, undefined);
      throw new LibosError('internal', `the coordinator answered ${status} with non-JSON`, status);
    }
    if (!ok) throw errorFromResponse(status, json);
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw new LibosError('internal', `unexpected answer from ${path}: ${parsed.error.message}`, status);
    }
    const raw = typeof json === 'object' && json !== null ? (json as Record<string, unknown>) : {};
    return { data: parsed.data, raw };
  }

  /**
   * A GET answered with a stream (server-sent events): the body as it arrives. An error answer
   * is read whole and thrown as a LibosError, as `request` does.
   */
  async stream(
    path: string,
    headers: Record<string, string> = {},
    options: RequestOptions = {},
  ): Promise<AsyncIterable<Buffer>> {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(`${this.base}${path}`, {
        method: 'GET',
        dispatcher: this.dispatcher,
        headers: { authorization: this.authorization, accept: 'text/event-stream', ...headers },
        signal: options.signal,
      });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason ?? error;
      throw new LibosError('transport', `cannot reach ${this.base}: ${describe(error)}`, 0);
    }
    if (response.statusCode < 200 || response.statusCode >= 300) {
      const text = await response.body.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {}
      throw errorFromResponse(response.statusCode, json);
    }
    return response.body;
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

/** Waits `ms`; rejects at once with the signal's reason if it aborts first (the client's and the workflow's retries). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      stopListening();
      resolve();
    }, ms);
    const stopListening = onAbort(signal, () => {
      clearTimeout(timer);
      reject(signal?.reason);
    });
  });
}
