import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

/** Writes one reply: a JSON body, or server-sent events until the end or until the client leaves. */
export class ReplyWriter {
  readonly #res: ServerResponse;
  readonly #gone: Promise<void>;

  constructor(res: ServerResponse) {
    this.#res = res;
    this.#gone = new Promise((resolve) => res.once('close', () => resolve()));
  }

  get closed(): boolean {
    return this.#res.destroyed || this.#res.writableEnded;
  }

  json(status: number, body: unknown): void {
    this.#res.writeHead(status, { 'content-type': 'application/json' });
    this.#res.end(JSON.stringify(body));
  }

  events(): void {
    this.#res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
  }

  /** One event; a client that went away makes every later write a no-op. */
  async event(name: string, data: unknown): Promise<void> {
    if (this.closed) return;
    if (!this.#res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`)) {
      await Promise.race([new Promise((resolve) => this.#res.once('drain', resolve)), this.#gone]);
    }
  }

  /** Waits `ms`, or less if the client goes away. */
  async pause(ms: number): Promise<void> {
    await Promise.race([sleep(ms), this.#gone]);
  }

  /** Sends nothing more until the client goes away. */
  async hang(): Promise<void> {
    await this.#gone;
  }

  end(): void {
    if (!this.closed) this.#res.end();
  }
}
