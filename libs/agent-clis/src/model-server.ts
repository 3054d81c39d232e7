import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { anthropicRequest, writeAnthropic } from './anthropic.js';
import { openaiRequest, writeOpenai } from './openai.js';
import type { Api, ModelRequest, Reply, Turn } from './script.js';
import { ReplyWriter } from './sse.js';

/** One request the server saw, and what it did with it. */
export interface SeenRequest {
  method: string;
  path: string;
  /** `turn N` (0-based script index), `side`, or what refused it. */
  served: string;
  request?: ModelRequest;
}

export interface ModelServerOptions {
  turns: Turn[];
  /**
   * Requests the agent CLI makes besides its agent loop (titles, quota probes): answered with
   * `sideReply`, without using a turn. Default: `isSideRequest`.
   */
  side?: (request: ModelRequest) => boolean;
  sideReply?: Reply;
  /** Requests bodies larger than this are refused (413). */
  maxBodyBytes?: number;
}

export interface ModelServer {
  /** `http://127.0.0.1:<port>`: Claude Code's `ANTHROPIC_BASE_URL`; Codex's provider `base_url` is `<url>/v1`. */
  url: string;
  readonly seen: SeenRequest[];
  /** The agent-loop requests, in order. */
  turnsUsed(): ModelRequest[];
  close(): Promise<void>;
}

/**
 * Claude Code's side requests carry no tools (a title, a topic, a quota probe with
 * `max_tokens: 1`); its agent loop always offers tools. Codex has no side requests.
 */
export function isSideRequest(request: ModelRequest): boolean {
  return request.api === 'anthropic' && request.tools.length === 0;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

async function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function apiOf(path: string): Api | 'count_tokens' | undefined {
  if (/\/messages\/count_tokens$/.test(path)) return 'count_tokens';
  if (/\/messages$/.test(path)) return 'anthropic';
  if (/\/responses$/.test(path)) return 'openai';
  return undefined;
}

/**
 * A scripted model on loopback that speaks the Anthropic Messages API and the OpenAI Responses
 * API, so real agent CLIs can run offline: each agent-loop request gets the next turn of the
 * script; anything the script did not foresee is answered 400 with a message naming it, which
 * the CLI reports as an API error (so a test fails with a reason instead of hanging).
 */
export async function startModelServer(options: ModelServerOptions): Promise<ModelServer> {
  const seen: SeenRequest[] = [];
  const used: ModelRequest[] = [];
  const side = options.side ?? isSideRequest;
  const sideReply: Reply = options.sideReply ?? {
    type: 'text',
    text: 'OK',
    usage: { input_tokens: 1, output_tokens: 1 },
  };
  const limit = options.maxBodyBytes ?? MAX_BODY_BYTES;
  let next = 0;
  let answered = 0;

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const out = new ReplyWriter(res);
    const record = (served: string, request?: ModelRequest) =>
      seen.push({ method: req.method ?? '', path, served, ...(request ? { request } : {}) });
    void (async () => {
      const api = req.method === 'POST' ? apiOf(path) : undefined;
      if (api === undefined) {
        record('not found');
        out.json(404, { error: { type: 'not_found_error', message: `no route ${req.method} ${path}` } });
        return;
      }
      const text = await readBody(req, limit);
      if (text === undefined) {
        record('too large');
        out.json(413, { error: { type: 'request_too_large', message: 'request too large' } });
        return;
      }
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        record('not JSON');
        out.json(400, { error: { type: 'invalid_request_error', message: 'the body is not JSON' } });
        return;
      }
      if (api === 'count_tokens') {
        record('count_tokens');
        out.json(200, { input_tokens: Math.ceil(text.length / 4) });
        return;
      }
      answered += 1;
      const request =
        api === 'anthropic' ? anthropicRequest(path, body, answered) : openaiRequest(path, body, answered);
      let reply: Reply;
      if (side(request)) {
        record('side', request);
        reply = sideReply;
      } else {
        const turn = options.turns[next];
        if (turn === undefined) {
          record('script exhausted', request);
          reply = {
            type: 'error',
            status: 400,
            message: `scripted model: no turn left for request ${answered}`,
          };
        } else if (turn.match !== undefined && !turn.match(request)) {
          record(`turn ${next} did not match`, request);
          reply = {
            type: 'error',
            status: 400,
            message: `scripted model: request ${answered} does not match turn ${next}`,
          };
        } else {
          record(`turn ${next}`, request);
          used.push(request);
          if (turn.repeat !== true) next += 1;
          reply = typeof turn.reply === 'function' ? turn.reply(request) : turn.reply;
        }
      }
      const id = `${answered}_${randomBytes(4).toString('hex')}`;
      await (api === 'anthropic'
        ? writeAnthropic(request, reply, id, out)
        : writeOpenai(request, reply, id, out));
    })().catch((error: unknown) => {
      if (!res.headersSent) out.json(500, { error: { type: 'api_error', message: String(error) } });
      else res.destroy();
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    turnsUsed: () => [...used],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
