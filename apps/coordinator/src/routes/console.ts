import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { Kernel } from '@libos/kernel';
import { pidSchema, rootOf } from '@libos/protocol';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { abortOnClose } from '../abort-on-close.js';
import type { AdminAuth } from '../auth.js';
import { presentedToken } from '../auth.js';
import type { ConsoleSessions } from '../console-sessions.js';
import { HttpRefusal } from '../http-errors.js';
import { errorResponses } from './responses.js';

export const CONSOLE_PATH = '/ui';

export interface ConsoleRouteDeps {
  kernel: Kernel;
  auth: AdminAuth;
  sessions: ConsoleSessions;
  /** The console's built assets (`index.html`, `assets/`); undefined: the console is not built. */
  assetsDir: string | undefined;
  /** Event streams open at once on this coordinator; one more is 429. */
  maxStreams: number;
  /** Aborted at shutdown: open streams end (the page reconnects). */
  shutdown: AbortSignal;
  keepAliveMs?: number;
}

/** Where `@libos/console` put its build, if it is installed and built. */
export function consoleAssetsDir(): string | undefined {
  try {
    const manifest = createRequire(import.meta.url).resolve('@libos/console/package.json');
    const dir = join(dirname(manifest), 'dist');
    return existsSync(join(dir, 'index.html')) ? dir : undefined;
  } catch {
    return undefined;
  }
}

// One rule for the console's pages: its own scripts and styles only (inline style attributes are
// how burn bars get their width), never framed.
const CSP =
  "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'";

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function loginPage(problem?: string): string {
  const alert = problem ? `<p role="alert" class="problem">${escapeHtml(problem)}</p>` : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><title>libos console: log in</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;margin:0;display:grid;place-items:center;min-height:100vh;background:#f4f5f7;color:#1d2330}
form{background:#fff;padding:2rem 2.5rem;border-radius:8px;box-shadow:0 1px 4px #0002;min-width:22rem}
h1{font-size:1.25rem;margin:0 0 1rem}label{display:block;font-weight:600;margin-bottom:.25rem}
input{width:100%;box-sizing:border-box;font:inherit;padding:.5rem;border:1px solid #8a93a6;border-radius:4px}
button{margin-top:1rem;font:inherit;padding:.5rem 1.25rem;border:0;border-radius:4px;background:#2451b5;color:#fff;cursor:pointer}
input:focus,button:focus{outline:3px solid #f2b705;outline-offset:1px}.problem{color:#a11;font-weight:600}
</style></head><body>
<form method="post" action="${CONSOLE_PATH}/login">
<h1>libos console</h1>${alert}
<label for="token">Admin token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Log in</button>
</form></body></html>`;
}

/** The login form's body, in any content type: it is read before anyone is known. */
const LOGIN_BODY_LIMIT = 8 * 1024;

/**
 * The console at `/ui`: its login, its pages (the built `@libos/console` assets), and the one
 * admin route it adds, the event stream of a process's subtree. Every data call of the page goes
 * to the admin API, which accepts the session cookie these routes set (see `AdminAuth.check`).
 */
export async function consoleRoutes(app: FastifyInstance, deps: ConsoleRouteDeps): Promise<void> {
  const { sessions, auth } = deps;
  const index = deps.assetsDir ? readFileSync(join(deps.assetsDir, 'index.html'), 'utf8') : undefined;

  await app.register(async (scope) => {
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: LOGIN_BODY_LIMIT },
      (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );
    const html = (reply: FastifyReply, status: number, body: string) =>
      reply
        .status(status)
        .header('content-type', 'text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('content-security-policy', CSP)
        .send(body);
    /** Session or Basic; a Basic login also starts a session, so the page's own calls carry the cookie. */
    const signedIn = async (request: FastifyRequest, reply: FastifyReply): Promise<boolean> => {
      if (await sessions.valid(request)) return true;
      const token = presentedToken(request);
      if (token === undefined || !auth.matches(token)) return false;
      reply.header('set-cookie', await sessions.start(request.protocol === 'https'));
      return true;
    };
    const page = async (request: FastifyRequest, reply: FastifyReply) => {
      if (!(await signedIn(request, reply))) {
        // The form itself is a page like any other (200); a wrong token presented is 401.
        if (!presentedToken(request)) return html(reply, 200, loginPage());
        return html(reply, 401, loginPage('That is not the admin token.'));
      }
      if (!index) {
        throw new HttpRefusal(
          'unavailable',
          'the console is not built: run `npx nx run @libos/console:build`',
        );
      }
      return html(reply, 200, index);
    };
    scope.get(CONSOLE_PATH, { schema: { hide: true } }, page);
    scope.get(`${CONSOLE_PATH}/`, { schema: { hide: true } }, page);
    scope.post(
      `${CONSOLE_PATH}/login`,
      {
        bodyLimit: LOGIN_BODY_LIMIT,
        schema: { hide: true, body: z.object({ token: z.string().max(4096) }) },
      },
      async (request, reply) => {
        const { token } = request.body as { token: string };
        if (!auth.matches(token)) {
          request.log.info('console login refused');
          return html(reply, 401, loginPage('That is not the admin token.'));
        }
        return reply
          .header('set-cookie', await sessions.start(request.protocol === 'https'))
          .redirect(`${CONSOLE_PATH}/`, 303);
      },
    );
    scope.post(
      `${CONSOLE_PATH}/logout`,
      { bodyLimit: LOGIN_BODY_LIMIT, schema: { hide: true } },
      async (request, reply) =>
        reply.header('set-cookie', await sessions.end(request)).redirect(`${CONSOLE_PATH}/`, 303),
    );
    if (deps.assetsDir) {
      await scope.register(async (assets) => {
        assets.addHook('onRequest', async (request, reply) => {
          if (!(await signedIn(request, reply)))
            throw new HttpRefusal('unauthenticated', 'log in at /ui first');
        });
        await assets.register(fastifyStatic, {
          root: join(deps.assetsDir as string, 'assets'),
          prefix: `${CONSOLE_PATH}/assets/`,
          index: false,
          // Vite names each asset by its content's hash.
          immutable: true,
          maxAge: '1y',
        });
      });
    }
  });

  await app.register(async (scope) => eventRoutes(scope, deps));
}

const EVENTS_DESCRIPTION = `Row changes in the subtree of \`pid\` (the process and its descendants), live, as server-sent events, \
fed by the kernel's per-tree wake channel (one subscription per tree for all viewers). Events: \`ready\` once the stream \
is subscribed (read the state after it and apply changes on top), \`changes\` with \`data\` \`{"changes":[{"pid","gen","status"}]}\` \
(a spawn appears as its first change; \`gen\` orders changes of one process), and \`resync\` after the coordinator lost \
its Redis subscription for a while (changes may have been missed: read the state again). At most \`LIBOS_CONSOLE_MAX_STREAMS\` \
streams are open at once on one coordinator (429 beyond).`;

async function eventRoutes(app: FastifyInstance, deps: ConsoleRouteDeps): Promise<void> {
  const { kernel } = deps;
  const typed = app.withTypeProvider<ZodTypeProvider>();
  typed.addHook('onRequest', async (request) => deps.auth.check(request));
  let open = 0;

  typed.get(
    '/v1/admin/processes/:pid/events',
    {
      schema: {
        tags: ['admin'],
        security: [{ bearer: [] }],
        description: EVENTS_DESCRIPTION,
        params: z.object({ pid: pidSchema }),
        response: {
          200: {
            description: 'A stream of server-sent events (`ready`, `changes`, `resync`).',
            content: { 'text/event-stream': { schema: z.string() } },
          },
          ...errorResponses(['unauthenticated', 'permission_denied', 'not_found', 'resource_exhausted'], {
            params: true,
          }),
        },
      },
    },
    async (request, reply) => {
      const { pid } = request.params;
      if (open >= deps.maxStreams) {
        throw new HttpRefusal(
          'resource_exhausted',
          `${open} console event streams are open on this coordinator (LIBOS_CONSOLE_MAX_STREAMS): close one`,
        );
      }
      await kernel.admin.getProcess(pid); // 404 before the stream starts
      open += 1;
      const signal = abortOnClose(request, reply, deps.shutdown);
      const inSubtree = (other: string) => other === pid || other.startsWith(`${pid}.`);
      reply.hijack();
      const raw = reply.raw;
      let release: (() => void) | undefined;
      const done = new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
      const keepAlive = setInterval(() => raw.write(': keep-alive\n\n'), deps.keepAliveMs ?? 15_000);
      keepAlive.unref();
      try {
        raw.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
        });
        release = await kernel.wakeHub.listen(kernel.keys.treeTopic(rootOf(pid)), (event) => {
          if (event.type === 'reconnect') {
            raw.write('event: resync\ndata: {}\n\n');
            return;
          }
          const rows = JSON.parse(event.message) as Array<[string, number, string]>;
          const changes = rows
            .filter(([changed]) => inSubtree(changed))
            .map(([changed, gen, status]) => ({ pid: changed, gen, status }));
          // A slow reader's socket buffers; the page reads the state again after a resync.
          if (changes.length > 0) raw.write(`event: changes\ndata: ${JSON.stringify({ changes })}\n\n`);
        });
        raw.write('event: ready\ndata: {}\n\n');
        await done;
      } catch (error) {
        reply.log.warn(
          { err: error instanceof Error ? error.message : String(error) },
          'event stream failed',
        );
      } finally {
        open -= 1;
        clearInterval(keepAlive);
        release?.();
        if (!raw.destroyed) raw.end();
      }
      return reply;
    },
  );
}
