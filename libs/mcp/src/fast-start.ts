import { PassThrough, type Readable, Writable } from 'node:stream';
import { badEnvNames, initializeResult } from './info.js';

// `libos mcp` as an agent CLI starts it: the CLI sends `initialize` and waits (Codex gives up on
// a slow server's tools for its first turn unless told to wait). Loading the server (the MCP
// SDK, zod, the libos client) takes far longer than answering, so `initialize` is answered at
// once from `info.ts`, the server loads meanwhile, and then gets every message in order,
// `initialize` included, so its state is the SDK's own; its duplicate answer is dropped.

export interface FastStartOptions {
  env?: NodeJS.ProcessEnv;
  stdin?: Readable;
  stdout?: NodeJS.WritableStream;
  /** Loads the real server; resolves when the client has gone (default: `serveMcpStdio`). */
  load?: () => Promise<(env: NodeJS.ProcessEnv, io: { stdin: Readable; stdout: Writable }) => Promise<void>>;
}

interface JsonRpc {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: { protocolVersion?: unknown };
}

function parse(line: string): JsonRpc | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as JsonRpc)
      : undefined;
  } catch {
    return undefined;
  }
}

export async function serveMcpFast(options: FastStartOptions = {}): Promise<void> {
  const env = options.env ?? process.env;
  const stdin = options.stdin ?? process.stdin;
  const stdout = options.stdout ?? process.stdout;
  const bad = badEnvNames(env);
  if (bad.length > 0) {
    // Refused before `initialize` is answered, so the client reports the server as failed.
    throw new Error(
      `fromEnv: ${bad.join(', ')} missing or invalid; a libos worker sets LIBOS_URL, LIBOS_PID and LIBOS_TOKEN`,
    );
  }

  const input = new PassThrough();
  let answeredEarly: unknown;
  let pending = '';
  let early = true;
  // Loading the server is seconds of synchronous module evaluation on a loaded host, during which
  // no input is read: it starts once `initialize` has been answered (or any other message, or the
  // end of input, has come first), so that answer waits for node's own start only.
  let startLoading: () => void = () => {};
  const loadNow = new Promise<void>((resolve) => {
    startLoading = resolve;
  });
  const forward = (line: string) => {
    if (early && answeredEarly === undefined) {
      const message = parse(line);
      if (message?.method === 'initialize' && message.id !== undefined) {
        answeredEarly = message.id;
        const result = initializeResult(message.params?.protocolVersion);
        stdout.write(`${JSON.stringify({ result, jsonrpc: '2.0', id: message.id })}\n`, () => startLoading());
      } else if (line.trim() !== '') startLoading();
    }
    input.write(`${line}\n`);
  };
  stdin.setEncoding('utf8');
  stdin.on('data', (chunk: string) => {
    pending += chunk;
    let newline = pending.indexOf('\n');
    while (newline !== -1) {
      forward(pending.slice(0, newline));
      pending = pending.slice(newline + 1);
      newline = pending.indexOf('\n');
    }
  });
  stdin.once('end', () => {
    if (pending !== '') forward(pending);
    input.end();
    startLoading();
  });

  // The server's answers, less its own answer to the `initialize` already answered.
  let outPending = '';
  const output = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      outPending += chunk.toString();
      let newline = outPending.indexOf('\n');
      while (newline !== -1) {
        const line = outPending.slice(0, newline);
        outPending = outPending.slice(newline + 1);
        const message = answeredEarly === undefined ? undefined : parse(line);
        const duplicate =
          message !== undefined && message.id === answeredEarly && message.method === undefined;
        if (duplicate) answeredEarly = undefined;
        else stdout.write(`${line}\n`);
        newline = outPending.indexOf('\n');
      }
      done();
    },
  });

  const load =
    options.load ??
    (async () => {
      const { serveMcpStdio } = await import('./server.js');
      return (serveEnv: NodeJS.ProcessEnv, io: { stdin: Readable; stdout: Writable }) =>
        serveMcpStdio(serveEnv, io);
    });
  await loadNow;
  const serve = await load();
  early = false;
  await serve(env, { stdin: input, stdout: output });
}
