import type { Kernel } from '@libos/kernel';
import {
  adminObjectSchema,
  adminSignalArgsSchema,
  adminWaitArgsSchema,
  adminWaitResultSchema,
  createRootArgsSchema,
  createRootResultSchema,
  type ErrorCode,
  imageNameSchema,
  imageViewSchema,
  listImagesResultSchema,
  listProcessesQuerySchema,
  listProcessesResultSchema,
  oidSchema,
  pidSchema,
  processViewSchema,
} from '@libos/protocol';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { abortOnClose } from '../abort-on-close.js';
import type { AdminAuth } from '../auth.js';
import type { Launcher } from '../launcher.js';
import { registerProcessReads } from './admin-reads.js';
import { errorResponses } from './responses.js';
import { withdrawIfQueued } from './tools.js';

export interface AdminRouteDeps {
  kernel: Kernel;
  launcher: Launcher;
  auth: AdminAuth;
  pollMs: number;
  /** Aborted at shutdown, so open long-polls answer at once. */
  shutdown: AbortSignal;
  /** A pool became known (an image named it): show its queue on the board. */
  onPool: (pool: string) => void;
}

/** Every admin route can refuse a missing (401) or wrong (403) admin token. */
const auth: ErrorCode[] = ['unauthenticated', 'permission_denied'];
const common = { tags: ['admin'], security: [{ bearer: [] }] };

/** The operator's API, behind the admin token. */
export async function adminRoutes(app: FastifyInstance, deps: AdminRouteDeps): Promise<void> {
  const { kernel } = deps;
  const typed = app.withTypeProvider<ZodTypeProvider>();
  typed.addHook('onRequest', async (request) => deps.auth.check(request));

  typed.put(
    '/v1/admin/images/:name',
    {
      schema: {
        ...common,
        description: 'Register or replace an image: how a worker launches a child.',
        params: z.object({ name: imageNameSchema }),
        body: z.unknown(),
        response: {
          200: imageViewSchema,
          ...errorResponses([...auth, 'invalid_argument'], { params: true, body: true }),
        },
      },
    },
    async (request) => {
      const image = await kernel.admin.putImage(request.params.name, request.body);
      deps.onPool(image.spec.pool);
      return image;
    },
  );
  typed.get(
    '/v1/admin/images',
    { schema: { ...common, response: { 200: listImagesResultSchema, ...errorResponses(auth) } } },
    async () => ({ images: await kernel.admin.listImages() }),
  );
  typed.get(
    '/v1/admin/images/:name',
    {
      schema: {
        ...common,
        params: z.object({ name: imageNameSchema }),
        response: { 200: imageViewSchema, ...errorResponses([...auth, 'not_found'], { params: true }) },
      },
    },
    async (request) => kernel.admin.getImage(request.params.name),
  );

  typed.post(
    '/v1/admin/processes',
    {
      schema: {
        ...common,
        description: 'Create a root process; with `launch: true` a worker runs it under the contract.',
        body: createRootArgsSchema,
        response: {
          200: createRootResultSchema,
          ...errorResponses([...auth, 'not_found', 'resource_exhausted'], { body: true }),
        },
      },
    },
    async (request) => kernel.admin.createRoot(request.body),
  );
  typed.get(
    '/v1/admin/processes',
    {
      schema: {
        ...common,
        querystring: listProcessesQuerySchema,
        response: { 200: listProcessesResultSchema, ...errorResponses(auth, { query: true }) },
      },
    },
    async (request) => kernel.admin.listProcesses(request.query),
  );
  typed.get(
    '/v1/admin/processes/:pid',
    {
      schema: {
        ...common,
        params: z.object({ pid: pidSchema }),
        response: { 200: processViewSchema, ...errorResponses([...auth, 'not_found'], { params: true }) },
      },
    },
    async (request) => kernel.admin.getProcess(request.params.pid),
  );
  registerProcessReads(typed, kernel);
  typed.post(
    '/v1/admin/processes/:pid/signal',
    {
      schema: {
        ...common,
        description:
          'Pause, resume, cancel or terminate any nonterminal process (resume clears a host gate).',
        params: z.object({ pid: pidSchema }),
        body: adminSignalArgsSchema,
        response: {
          200: processViewSchema,
          ...errorResponses([...auth, 'not_found', 'failed_precondition'], { params: true, body: true }),
        },
      },
    },
    async (request) => {
      const { pid } = request.params;
      const signalled = await kernel.admin.signal(pid, request.body);
      await withdrawIfQueued(deps, pid, signalled.status);
      return kernel.admin.getProcess(pid);
    },
  );
  typed.post(
    '/v1/admin/processes/:pid/wait',
    {
      schema: {
        ...common,
        description: 'Observe any process, or block (long-poll) until it is terminal.',
        params: z.object({ pid: pidSchema }),
        body: adminWaitArgsSchema,
        response: {
          200: adminWaitResultSchema,
          ...errorResponses([...auth, 'not_found'], { params: true, body: true }),
        },
      },
    },
    async (request, reply) =>
      kernel.admin.wait(request.params.pid, request.body, {
        signal: abortOnClose(request, reply, deps.shutdown),
        pollMs: deps.pollMs,
      }),
  );
  typed.get(
    '/v1/admin/objects/:oid',
    {
      schema: {
        ...common,
        params: z.object({ oid: oidSchema }),
        response: { 200: adminObjectSchema, ...errorResponses([...auth, 'not_found'], { params: true }) },
      },
    },
    async (request) => kernel.admin.readObject(request.params.oid),
  );
}
