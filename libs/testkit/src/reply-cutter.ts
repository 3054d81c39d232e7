import { createServer, type Server, Socket } from 'node:net';

/**
 * A loopback TCP proxy in front of a Redis server that can lose one answer: the connection that
 * sends a command containing a marker has that command's reply withheld and is closed as the
 * reply arrives. The server ran the command; its caller never hears so, as in a network failure
 * between a script's run and its reply. Commands and replies are counted in RESP2 (what ioredis
 * speaks by default), so a reply to an earlier pipelined command still reaches its caller.
 */
export class ReplyCutter {
  readonly url: string;
  readonly #sockets = new Set<Socket>();
  #marker: Buffer | undefined;
  #cut: (() => void) | undefined;
  /** How many answers were lost so far. */
  cuts = 0;

  private constructor(
    private readonly server: Server,
    port: number,
  ) {
    this.url = `redis://127.0.0.1:${port}`;
  }

  /** Listens on a free loopback port and forwards each connection to `target` (`redis://host:port`). */
  static async start(target: string): Promise<ReplyCutter> {
    const { hostname, port } = new URL(target);
    let cutter: ReplyCutter | undefined;
    const server = createServer((client) => cutter?.forward(client, hostname, Number(port)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('the proxy has no port');
    cutter = new ReplyCutter(server, address.port);
    return cutter;
  }

  /** Resolves once the reply to the next command containing `marker` was withheld and its connection closed. */
  cutReplyTo(marker: string): Promise<void> {
    this.#marker = Buffer.from(marker);
    return new Promise((resolve) => {
      this.#cut = resolve;
    });
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  /** One client's connection, through to the server. */
  private forward(client: Socket, host: string, port: number): void {
    const upstream = new Socket();
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        this.#sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.connect(port, host);
    const commands = new RespCounter();
    const replies = new RespCounter();
    /** The index of the command whose reply is to be lost on this connection. */
    let doomed: number | undefined;
    client.on('data', (chunk: Buffer) => {
      const first = commands.count;
      const ends = commands.feed(chunk);
      const marked = doomed === undefined && this.#marker ? chunk.indexOf(this.#marker) : -1;
      if (marked >= 0) {
        // The marker's command: the first one this chunk ends after it, or the one still arriving.
        const found = ends.findIndex((end) => end > marked);
        doomed = first + (found >= 0 ? found : ends.length);
        this.#marker = undefined;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      const first = replies.count;
      const ends = replies.feed(chunk);
      // Replies before the doomed one pass; the doomed one's first byte closes both ends.
      const before = doomed === undefined ? Number.POSITIVE_INFINITY : doomed - first;
      const passed = before > ends.length ? chunk.length : before <= 0 ? 0 : (ends[before - 1] as number);
      if (passed > 0) client.write(passed === chunk.length ? chunk : chunk.subarray(0, passed));
      if (passed === chunk.length) return;
      this.cuts++;
      client.destroy();
      upstream.destroy();
      this.#cut?.();
      this.#cut = undefined;
    });
  }
}

/** Counts complete RESP2 values in a byte stream (commands one way, replies the other). */
class RespCounter {
  count = 0;
  #pending = Buffer.alloc(0);

  /** Takes the stream's next chunk; returns the end offset, in the chunk, of each value it completed. */
  feed(chunk: Buffer): number[] {
    const carried = this.#pending.length;
    const buffer = carried > 0 ? Buffer.concat([this.#pending, chunk]) : chunk;
    const ends: number[] = [];
    let at = 0;
    for (let end = valueEnd(buffer, at); end !== undefined; end = valueEnd(buffer, at)) {
      at = end;
      ends.push(end - carried);
      this.count++;
    }
    this.#pending = Buffer.from(buffer.subarray(at));
    return ends;
  }
}

/** Where the RESP2 value starting at `at` ends, or undefined while it is incomplete. */
function valueEnd(buffer: Buffer, at: number): number | undefined {
  const lineEnd = buffer.indexOf('\r\n', at);
  if (lineEnd < 0) return undefined;
  const type = String.fromCharCode(buffer[at] ?? 0);
  const n = Number(buffer.toString('latin1', at + 1, lineEnd));
  let next = lineEnd + 2;
  if (type === '$') {
    if (n < 0) return next;
    return buffer.length >= next + n + 2 ? next + n + 2 : undefined;
  }
  if (type === '*') {
    for (let i = 0; i < n; i++) {
      const end = valueEnd(buffer, next);
      if (end === undefined) return undefined;
      next = end;
    }
    return next;
  }
  return next; // +simple, -error, :integer
}
