import { basename, extname } from 'node:path';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { writeResultAtomic } from './atomic-write.js';
import { parseChildArgv } from './child-argv.js';
import { errorText } from './json.js';
import { type ContractRequest, parseRequestLine } from './request.js';
import { readRequestLine } from './request-line.js';
import { type ChildEnding, childEndingSchema, resultDocument } from './result.js';

export interface ChildContext {
  /** Aborts when the parent closes stdin (graceful cancel): return `interrupted` soon after. */
  signal: AbortSignal;
  /** Where the result will be written; the handler must not write there itself. */
  resultFile: string;
  /** The arguments other than the result path, for the child's own options. */
  args: string[];
}

export type ChildHandler = (request: ContractRequest, ctx: ChildContext) => Promise<ChildEnding>;

export interface RunChildOptions {
  /** The child's arguments, without the node executable and script. */
  argv: readonly string[];
  stdin: Readable;
  stderr: { write(text: string): unknown };
  /** Prefix of stderr lines and of handler failure reasons (`<name> failed: …`). */
  name: string;
}

/**
 * Runs one contract request through `handler` and returns the exit status: 0 whenever a result
 * was written (the file, not the status, tells the ending), nonzero when none could be (no
 * result path, no request, a malformed request without an id, a failed write).
 */
export async function runChild(handler: ChildHandler, options: RunChildOptions): Promise<number> {
  const { name, stderr } = options;
  const say = (text: string) => stderr.write(`${name}: ${text}\n`);
  const argv = parseChildArgv(options.argv);
  if (!argv.ok) {
    say(argv.problem);
    return 2;
  }
  const channel = await readRequestLine(options.stdin);
  try {
    if (channel.line === undefined) {
      say('stdin closed before a request arrived');
      return 1;
    }
    const parsed = parseRequestLine(channel.line);
    if (!parsed.ok && parsed.requestId === undefined) {
      say(`malformed request: ${parsed.problem}`);
      return 1;
    }
    const requestId = parsed.ok ? parsed.request.request_id : (parsed.requestId ?? '');
    const ending: ChildEnding = parsed.ok
      ? await endingOf(
          handler,
          parsed.request,
          { signal: channel.cancelled, resultFile: argv.resultFile, args: argv.rest },
          name,
        )
      : { status: 'failed', reason: `malformed request: ${parsed.problem}` };
    try {
      await writeResultAtomic(argv.resultFile, resultDocument(requestId, ending));
    } catch (error) {
      say(`cannot write the result to ${argv.resultFile}: ${errorText(error)}`);
      return 1;
    }
    if (ending.status === 'failed') say(ending.reason);
    return 0;
  } finally {
    channel.close();
  }
}

/** The handler's ending, with a throw or an ending that would write a malformed file as `failed`. */
async function endingOf(
  handler: ChildHandler,
  request: ContractRequest,
  ctx: ChildContext,
  name: string,
): Promise<ChildEnding> {
  let returned: unknown;
  try {
    returned = await handler(request, ctx);
  } catch (error) {
    return { status: 'failed', reason: `${name} failed: ${errorText(error)}` };
  }
  const checked = childEndingSchema.safeParse(returned);
  if (!checked.success) {
    return {
      status: 'failed',
      reason: `${name} failed: an invalid ending: ${z.prettifyError(checked.error)}`,
    };
  }
  return checked.data;
}

export interface ServeChildOptions {
  /** Defaults to the script's file name without its extension. */
  name?: string;
  /** Defaults to `process.argv.slice(2)`. */
  argv?: readonly string[];
  /** Exit the process with the status when done (default true; stdin would keep it alive). */
  exit?: boolean;
}

/** Makes this program a conforming contract child: one request in, one result file out. */
export async function serveChild(handler: ChildHandler, options: ServeChildOptions = {}): Promise<void> {
  const script = process.argv[1] ?? 'child';
  const name = options.name ?? basename(script, extname(script));
  const code = await runChild(handler, {
    argv: options.argv ?? process.argv.slice(2),
    stdin: process.stdin,
    stderr: process.stderr,
    name,
  });
  process.exitCode = code;
  if (options.exit ?? true) process.exit(code);
}
