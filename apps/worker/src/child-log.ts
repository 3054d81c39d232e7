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

  /** Forgets the partial line (its continuation was dropped); returns its bytes. */
  discard(): number {
    const bytes = this.held + this.cut;
    this.parts = [];
    this.whole = undefined;
    this.held = 0;
    this.cut = 0;
    return bytes;
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

/** Raw output waiting to be split: one stream's bytes as they came, with when they came. */
interface Pending {
  stream: 0 | 1;
  time: number;
  bytes: Buffer;
}

/** What a waiting chunk counts against the bound beyond its bytes (so tiny writes are bounded too). */
const CHUNK_OVERHEAD = 64;
/**
 * Consecutive small chunks of one stream are merged up to this size (or an eighth of the bound,
 * if smaller: dropping is by merged chunk, and must not take a whole small bound at once).
 */
const MERGE_BYTES = 4096;
const STREAMS = ['o', 'e'] as const;

/**
 * One attempt's stdout and stderr, on their way to the kernel's log store. Output waits here as
 * raw bytes (copied, consecutive small writes merged), at most `maxBytes` of it: the oldest is
 * dropped first and counted, so a flood costs neither memory nor a string per line it drops.
 * Every `flushMs` what waits is split into lines and leaves as one batch, one in flight at a
 * time, and at most one bound's worth per second (a batch of B bytes holds the next back for
 * B / maxBytes seconds), so a flood costs Redis a bounded rate. The dropped count travels with
 * the next batch. A child that writes nothing costs no call. Nothing here throws.
 */
export class AttemptLog {
  readonly stdout = (chunk: Uint8Array) => this.feed(0, chunk);
  readonly stderr = (chunk: Uint8Array) => this.feed(1, chunk);
  private readonly splitters: [LineSplitter, LineSplitter];
  private pending: (Pending | undefined)[] = [];
  private head = 0;
  private pendingCost = 0;
  private dropped = 0;
  /** Per stream: its oldest waiting bytes continue a line whose start was dropped. */
  private readonly orphaned = [false, false];
  /** Lines split off while a batch is being made. */
  private lines: LogRecord[] = [];
  private splitTime = 0;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  /** No batch starts before this (ms since the epoch). */
  private nextAt = 0;
  private used = false;
  private ended = false;
  private readonly mergeBytes: number;

  constructor(
    private readonly sink: (batch: LogBatch) => Promise<void>,
    private readonly settings: ChildLogSettings,
    private readonly onError: (error: unknown) => void,
  ) {
    this.mergeBytes = Math.min(MERGE_BYTES, settings.maxBytes >> 3);
    this.splitters = [0, 1].map(
      (stream) =>
        new LineSplitter(settings.lineBytes, (text) =>
          this.lines.push([STREAMS[stream] as 'o' | 'e', this.splitTime, text]),
        ),
    ) as [LineSplitter, LineSplitter];
  }

  /**
   * The attempt is over: what waits and the partial lines leave as the log's last batch (marked
   * ended) once the batch in flight is done. Resolves when it is stored or failed; no call at
   * all when the child wrote nothing.
   */
  async end(): Promise<void> {
    this.ended = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
    if (this.used) await this.send(true);
  }

  private feed(stream: 0 | 1, chunk: Uint8Array): void {
    if (this.ended || chunk.byteLength === 0) return;
    this.used = true;
    const time = Date.now();
    const last = this.pending[this.pending.length - 1];
    if (last && last.stream === stream && last.bytes.length + chunk.byteLength <= this.mergeBytes) {
      last.bytes = Buffer.concat([last.bytes, chunk]);
      last.time = time;
      this.pendingCost += chunk.byteLength;
    } else {
      // a pipe's chunk is an allocation of its own, kept as it is; a small one is copied (small
      // copies share slabs) since more may be merged into it
      const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      this.pending.push({ stream, time, bytes: bytes.length < this.mergeBytes ? Buffer.from(bytes) : bytes });
      this.pendingCost += chunk.byteLength + CHUNK_OVERHEAD;
    }
    this.shrink();
    if (this.head > 1024 && this.head * 2 > this.pending.length) {
      this.pending = this.pending.slice(this.head);
      this.head = 0;
    }
    this.schedule(this.settings.flushMs);
  }

  /**
   * Drops the oldest output until what waits is within the bound: whole chunks, or the front of
   * the oldest up to a line's end (a chunk may hold more than the bound).
   */
  private shrink(): void {
    while (this.pendingCost > this.settings.maxBytes && this.head < this.pending.length) {
      const oldest = this.pending[this.head] as Pending;
      const excess = this.pendingCost - this.settings.maxBytes;
      const newline = oldest.bytes.indexOf(10, Math.max(0, excess - 1));
      if (newline < 0 || newline + 1 >= oldest.bytes.length) {
        this.dropOldest();
        continue;
      }
      const cut = newline + 1;
      // the line held for this stream continued in the bytes cut: it cannot be finished now
      this.dropped += cut + this.splitters[oldest.stream].discard();
      oldest.bytes = Buffer.from(oldest.bytes.subarray(cut));
      this.pendingCost -= cut;
      this.orphaned[oldest.stream] = false;
    }
  }

  private dropOldest(): void {
    const oldest = this.pending[this.head] as Pending;
    this.pending[this.head++] = undefined;
    this.pendingCost -= oldest.bytes.length + CHUNK_OVERHEAD;
    this.dropped += oldest.bytes.length;
    // a line begun before these bytes cannot be finished now: drop what is held of it
    this.dropped += this.splitters[oldest.stream].discard();
    this.orphaned[oldest.stream] = oldest.bytes[oldest.bytes.length - 1] !== 10;
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
    if (this.head < this.pending.length) this.schedule(0);
  }

  /** Splits what waits into lines (the partial ones stay, unless `end`). */
  private takeLines(end: boolean): LogRecord[] {
    for (let i = this.head; i < this.pending.length; i++) {
      const entry = this.pending[i] as Pending;
      let bytes = entry.bytes;
      if (this.orphaned[entry.stream]) {
        // the rest of a line whose start was dropped
        const newline = bytes.indexOf(10);
        const rest = newline < 0 ? bytes.length : newline + 1;
        this.dropped += rest;
        bytes = bytes.subarray(rest);
        this.orphaned[entry.stream] = newline < 0;
      }
      this.splitTime = entry.time;
      this.splitters[entry.stream].push(bytes);
    }
    if (end) {
      this.splitTime = Date.now();
      for (const splitter of this.splitters) splitter.flush();
    }
    this.pending = [];
    this.head = 0;
    this.pendingCost = 0;
    const lines = this.lines;
    this.lines = [];
    return lines;
  }

  /** Sends what waits; a failed batch is counted as dropped (the next batch says so). */
  private async send(end: boolean): Promise<void> {
    const lines = this.takeLines(end);
    const dropped = this.dropped;
    this.dropped = 0;
    if (lines.length === 0 && dropped === 0 && !end) return;
    const bytes = lines.reduce((sum, line) => sum + cost(line[2]), 0);
    this.nextAt = Date.now() + Math.max(this.settings.flushMs, (1000 * bytes) / this.settings.maxBytes);
    try {
      await this.sink({ lines, dropped, end });
    } catch (error) {
      for (const line of lines) this.dropped += logLineBytes(line[2]);
      this.dropped += dropped;
      this.onError(error);
    }
  }
}
