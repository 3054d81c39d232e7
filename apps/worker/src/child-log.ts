import { LOG_LINE_OVERHEAD, type LogBatch, type LogRecord, logLineBytes } from '@libos/kernel';

export interface ChildLogSettings {
  /** The bound of one attempt's log, kept locally and in Redis (LIBOS_CHILD_LOG_BYTES). */
  maxBytes: number;
  /** A longer line is cut there and says so (LIBOS_CHILD_LOG_LINE_BYTES). */
  lineBytes: number;
  /** How long lines gather before a batch is sent. */
  flushMs: number;
}

export const DEFAULT_FLUSH_MS = 100;

const cost = (text: string) => logLineBytes(text) + LOG_LINE_OVERHEAD;

/**
 * One stream's bytes as lines: a line ends at `\n` (a `\r` before it is dropped) or at the
 * stream's end. At most `limit` bytes of a line are held; the rest is skipped and counted, and
 * the line says so when it ends (`… [line cut: N more bytes]`).
 */
class LineSplitter {
  private parts: Buffer[] = [];
  /** A line that began and ended in one chunk, decoded at once. */
  private whole: string | undefined;
  private held = 0;
  private cut = 0;

  constructor(
    private readonly limit: number,
    private readonly emit: (text: string) => void,
  ) {}

  push(chunk: Uint8Array): void {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    while (start < bytes.length) {
      const newline = bytes.indexOf(10, start);
      const end = newline < 0 ? bytes.length : newline;
      this.take(bytes, start, end);
      if (newline < 0) return;
      this.finish();
      start = newline + 1;
    }
  }

  /** The partial line at the stream's end, if any. */
  flush(): void {
    if (this.held > 0 || this.cut > 0) this.finish();
  }

  private take(bytes: Buffer, start: number, end: number): void {
    const kept = Math.min(end - start, this.limit - this.held);
    if (kept > 0 && this.held === 0 && end < bytes.length) {
      // the common case, a whole line in one chunk: decoded in place, nothing copied
      this.whole = bytes.toString('utf8', start, start + kept);
    } else if (kept > 0) {
      // copied: a slice would keep the whole chunk alive
      this.parts.push(Buffer.from(bytes.subarray(start, start + kept)));
    }
    this.held += kept;
    this.cut += end - start - kept;
  }

  private finish(): void {
    let text = this.whole ?? Buffer.concat(this.parts, this.held).toString('utf8');
    this.whole = undefined;
    if (this.cut === 0 && text.endsWith('\r')) text = text.slice(0, -1);
    if (this.cut > 0) text += ` … [line cut: ${this.cut} more bytes]`;
    this.parts = [];
    this.held = 0;
    this.cut = 0;
    this.emit(text);
  }
}

/**
 * One attempt's stdout and stderr, on their way to the kernel's log store. Lines gather for
 * `flushMs` and leave in batches, one in flight at a time, and at most one bound's worth per
 * second (a batch of B bytes holds the next back for B / maxBytes seconds), so a flood costs
 * Redis a bounded rate. Lines waiting are kept within the bound too: the oldest are dropped and
 * counted, and the count travels with the next batch. A child that writes nothing costs no call.
 * Every method is safe to call from the runner's stream handlers: nothing here throws.
 */
export class AttemptLog {
  readonly stdout = (chunk: Uint8Array) => this.feed(this.out, chunk);
  readonly stderr = (chunk: Uint8Array) => this.feed(this.err, chunk);
  private readonly out: LineSplitter;
  private readonly err: LineSplitter;
  private queue: (LogRecord | undefined)[] = [];
  private head = 0;
  private pendingCost = 0;
  private dropped = 0;
  private now = 0;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  /** No batch starts before this (ms since the epoch). */
  private nextAt = 0;
  private used = false;
  private ended = false;

  constructor(
    private readonly sink: (batch: LogBatch) => Promise<void>,
    private readonly settings: ChildLogSettings,
    private readonly onError: (error: unknown) => void,
  ) {
    this.out = new LineSplitter(settings.lineBytes, (text) => this.add('o', text));
    this.err = new LineSplitter(settings.lineBytes, (text) => this.add('e', text));
  }

  /**
   * The attempt is over: its partial lines are lines, and what is waiting leaves as the log's
   * last batch (marked ended) once the batch in flight is done. Resolves when it is stored or
   * failed; no call at all when the child wrote nothing.
   */
  async end(): Promise<void> {
    this.out.flush();
    this.err.flush();
    this.ended = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
    if (this.used) await this.send(true);
  }

  private feed(splitter: LineSplitter, chunk: Uint8Array): void {
    if (this.ended) return;
    this.now = Date.now();
    splitter.push(chunk);
  }

  private add(stream: 'o' | 'e', text: string): void {
    this.used = true;
    this.queue.push([stream, this.now, text]);
    this.pendingCost += cost(text);
    while (this.pendingCost > this.settings.maxBytes && this.head < this.queue.length) {
      const oldest = this.queue[this.head] as LogRecord;
      this.queue[this.head++] = undefined;
      this.pendingCost -= cost(oldest[2]);
      this.dropped += logLineBytes(oldest[2]);
    }
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    if (!this.ended) this.schedule(this.settings.flushMs);
  }

  private schedule(atLeastMs: number): void {
    if (this.timer || this.inFlight || this.ended) return;
    const wait = Math.max(atLeastMs, this.nextAt - Date.now());
    this.timer = setTimeout(() => void this.pump(), wait);
    this.timer.unref();
  }

  private async pump(): Promise<void> {
    this.timer = undefined;
    this.inFlight = this.send(false);
    await this.inFlight;
    this.inFlight = undefined;
    if (this.head < this.queue.length) this.schedule(0);
  }

  /** Sends what is waiting; a failed batch is counted as dropped (the next batch says so). */
  private async send(end: boolean): Promise<void> {
    const lines = this.queue.slice(this.head) as LogRecord[];
    const { pendingCost, dropped } = this;
    this.queue = [];
    this.head = 0;
    this.pendingCost = 0;
    this.dropped = 0;
    this.nextAt = Date.now() + Math.max(this.settings.flushMs, (1000 * pendingCost) / this.settings.maxBytes);
    try {
      await this.sink({ lines, dropped, end });
    } catch (error) {
      for (const line of lines) this.dropped += logLineBytes(line[2]);
      this.dropped += dropped;
      this.onError(error);
    }
  }
}
