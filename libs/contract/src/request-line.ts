import type { Readable } from 'node:stream';

export interface RequestChannel {
  /** The first line (without its `\n`), or undefined when stdin closed before any byte arrived. */
  line: string | undefined;
  /** Fires when stdin reaches EOF (or fails) after the request: the parent's cancel. */
  cancelled: AbortSignal;
  /** Stops listening to stdin. */
  close(): void;
}

/**
 * Reads exactly one request line without waiting for EOF, then keeps draining stdin so that
 * its EOF — the parent's graceful cancel — is noticed. A last line without `\n` still counts.
 */
export function readRequestLine(stdin: Readable): Promise<RequestChannel> {
  const controller = new AbortController();
  const chunks: Buffer[] = [];
  let line: string | undefined;
  let settled = false;
  return new Promise((resolve) => {
    const close = () => {
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      stdin.off('close', onEnd);
      stdin.off('error', onEnd);
      stdin.pause();
    };
    const settle = () => {
      settled = true;
      resolve({ line, cancelled: controller.signal, close });
    };
    function onData(chunk: Buffer | string) {
      if (settled) return; // later input is never read: one request per run
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      const newline = buffer.indexOf(0x0a);
      if (newline < 0) {
        chunks.push(buffer);
        return;
      }
      chunks.push(buffer.subarray(0, newline));
      line = Buffer.concat(chunks).toString('utf8');
      settle();
    }
    function onEnd() {
      if (!settled) {
        const partial = Buffer.concat(chunks);
        if (partial.length > 0) line = partial.toString('utf8');
        settle();
      }
      controller.abort(new Error('the parent closed stdin'));
    }
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    stdin.on('close', onEnd);
    stdin.on('error', onEnd);
  });
}
