import type { Kernel } from '@libos/kernel';
import {
  type ChildLogPage,
  childLogPageSchema,
  childLogQuerySchema,
  logCursorSchema,
  pidSchema,
} from '@libos/protocol';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { abortOnClose } from '../abort-on-close.js';
import type { AdminAuth } from '../auth.js';
import { HttpRefusal } from '../http-errors.js';
import { errorResponses } from './responses.js';

export interface LogRouteDeps {
  kernel: Kernel;
  auth: AdminAuth;
  /** Aborted at shutdown: open streams end (the client reconnects with its last event id). */
  shutdown: AbortSignal;
  /**
   * A stream lasts at most this long, as a long-poll does: then it closes without `end` and the
   * client reconnects after its last event id (EventSource and the SDK do it themselves).
   */
  windowMs: number;
  /** A comment line every this often keeps proxies from closing a quiet stream. */
  keepAliveMs?: number;
}

const errors = errorResponses(['unauthenticated', 'permission_denied', 'not_found', 'invalid_argument'], {
  params: true,
  query: true,
});

const DESCRIPTION = `A page of one attempt's child output (stdout and stderr, oldest first; default the latest attempt). \
With \`follow=true\` the answer is \`text/event-stream\`: one \`page\` event per batch of new lines (\`data\` is a page, \`id\` its \`next\`), \
then an \`end\` event once the attempt's log has ended, and the stream closes. A stream also closes after the long-poll \
window without \`end\`: a reconnect resumes after \`Last-Event-ID\` (or \`after\`); close an EventSource on \`end\`.`;

/** `GET /v1/admin/processes/{pid}/logs`: children's output, as a page or followed live (SSE). */
export async function logRoutes(app: FastifyInstance, deps: LogRouteDeps): Promise<void> {
  const { kernel } = deps;
  const typed = app.withTypeProvider<ZodTypeProvider>();
  typed.addHook('onRequest', async (request) => deps.auth.check(request));

  typed.get(
    '/v1/admin/processes/:pid/logs',
    {
      schema: {
        tags: ['admin'],
        security: [{ bearer: [] }],
        description: DESCRIPTION,
        params: z.object({ pid: pidSchema }),
        querystring: childLogQuerySchema,
        response: {
          200: {
            description:
              'A page of lines (JSON), or with follow=true a stream of pages (server-sent events).',
            content: {
              'application/json': { schema: childLogPageSchema },
              'text/event-stream': { schema: z.string() },
            },
          },
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const { pid } = request.params;
      const { follow, attempt, limit } = request.query;
      const after =
        request.query.after ?? (follow ? lastEventId(request.headers['last-event-id']) : undefined);
      if (!follow) return kernel.logs.read(pid, { attempt, after, limit });
      const signal = AbortSignal.any([
        abortOnClose(request, reply, deps.shutdown),
        AbortSignal.timeout(deps.windowMs),
      ]);
      const pages = kernel.logs.follow(pid, { attempt, after, limit }, signal);
      // The first page is read before anything is sent, so a refusal is still a JSON error.
      const first = await pages.next();
      return streamPages(reply, first, pages, deps.keepAliveMs ?? 15_000);
    },
  );
}

function lastEventId(header: string | string[] | undefined): string | undefined {
  if (header === undefined || Array.isArray(header) || header === '') return undefined;
  const parsed = logCursorSchema.safeParse(header);
  if (!parsed.success)
    throw new HttpRefusal('invalid_argument', `Last-Event-ID: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

function event(name: 'page' | 'end', page: ChildLogPage): string {
  const id = page.next === null ? '' : `id: ${page.next}\n`;
  return `event: ${name}\n${id}data: ${JSON.stringify(page)}\n\n`;
}

/**
 * Writes pages as server-sent events on the raw response (the reply is hijacked: Fastify's
 * serializer never sees it). Ends after the `end` event, when the client goes away (the pages
 * stop through the abort signal) or at shutdown.
 */
async function streamPages(
  reply: FastifyReply,
  first: IteratorResult<ChildLogPage>,
  pages: AsyncGenerator<ChildLogPage>,
  keepAliveMs: number,
): Promise<FastifyReply> {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  const keepAlive = setInterval(() => raw.write(': keep-alive\n\n'), keepAliveMs);
  keepAlive.unref();
  try {
    for (let next = first; !next.done; next = await pages.next()) {
      const page = next.value;
      if (raw.destroyed) break;
      // Backpressure: a slow reader holds the follower, not an unbounded buffer here.
      if (!raw.write(event(page.ended ? 'end' : 'page', page))) {
        await new Promise((resolve) => {
          raw.once('drain', resolve);
          raw.once('close', resolve);
        });
      }
    }
  } catch (error) {
    // Redis went away mid-stream: the client reconnects after its last event id.
    reply.log.warn({ err: error instanceof Error ? error.message : String(error) }, 'log stream failed');
  } finally {
    clearInterval(keepAlive);
    await pages.return(undefined);
    if (!raw.destroyed) raw.end();
  }
  return reply;
}
