import type { Readable, Writable } from 'node:stream';
import { type ChildEnding, readRequestLine, resultDocument, writeResultAtomic } from '@libos/contract';
import { parseShimOptions, type ShimOptions } from './options.js';
import { parseShimRequest, type ShimRequest } from './request.js';
import { textOf } from './text.js';

export interface ShimContext {
  /** Aborted when the parent closes the shim's stdin (graceful cancel). */
  cancel: AbortSignal;
}

/** One CLI dialect: how a request becomes a CLI run and how that run becomes an ending. */
export interface ShimDialect {
  name: 'claude' | 'codex';
  run(options: ShimOptions, request: ShimRequest, context: ShimContext): Promise<ChildEnding>;
}

export interface ShimIo {
  stdin: Readable;
  stdout: Writable;
  stderr: Writable;
}

/** Exit statuses: 0 whenever a result was written (the file tells the ending). */
export const EXIT_RESULT_WRITTEN = 0;
export const EXIT_NO_RESULT = 1;
export const EXIT_USAGE = 2;

/**
 * A whole shim (reference §3.1 `serve`): parse argv, read one request line, run the dialect,
 * write one result file atomically. Every ending the shim controls writes a result; without a
 * result path, a request line, or a request id to answer, it prints `<name>: <problem>` on
 * stderr and exits nonzero instead, and the runner reports that the child left no result.
 */
export async function serveShim(dialect: ShimDialect, argv: readonly string[], io: ShimIo): Promise<number> {
  const name = `${dialect.name} shim`;
  const say = (stream: Writable, text: string) => stream.write(`${text}\n`);

  const parsed = parseShimOptions(argv, dialect.name);
  if (parsed.type === 'help') {
    say(io.stdout, parsed.text);
    return EXIT_RESULT_WRITTEN;
  }
  if (parsed.type === 'error') {
    say(io.stderr, `${name}: ${parsed.problem}`);
    return EXIT_USAGE;
  }
  const options = parsed.options;

  const channel = await readRequestLine(io.stdin);
  try {
    const line = channel.line;
    if (line === undefined) {
      say(io.stderr, `${name}: stdin closed before a request arrived`);
      return EXIT_NO_RESULT;
    }

    let requestId: string;
    let ending: ChildEnding;
    const request = parseShimRequest(line);
    if (request.ok) {
      requestId = request.request.request_id;
      try {
        ending = await dialect.run(options, request.request, { cancel: channel.cancelled });
      } catch (error) {
        ending = { status: 'failed', reason: `${name} failed: ${textOf(error)}` };
      }
    } else if (request.requestId !== undefined) {
      requestId = request.requestId;
      ending = { status: 'failed', reason: `malformed request: ${request.problem}` };
    } else {
      say(io.stderr, `${name}: malformed request: ${request.problem}`);
      return EXIT_NO_RESULT;
    }

    try {
      await writeResultAtomic(options.resultFile, resultDocument(requestId, ending));
    } catch (error) {
      say(io.stderr, `${name}: cannot write the result to ${options.resultFile}: ${textOf(error)}`);
      return EXIT_NO_RESULT;
    }
    // For a human watching stderr; the result file already says it.
    if (ending.status === 'failed') say(io.stderr, `${name}: ${ending.reason}`);
    return EXIT_RESULT_WRITTEN;
  } finally {
    channel.close();
  }
}
