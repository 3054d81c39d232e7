import { deleteProcessResultSchema, type ErrorCode, gcReportSchema, pidSchema } from '@libos/protocol';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AdminAuth } from '../auth.js';
import type { GcSweeper } from '../gc-sweeper.js';
import { errorResponses } from './responses.js';

export interface RetentionRouteDeps {
  sweeper: GcSweeper;
  auth: AdminAuth;
}

/** Every admin route can refuse a missing (401) or wrong (403) admin token. */
const auth: ErrorCode[] = ['unauthenticated', 'permission_denied'];
const common = { tags: ['admin'], security: [{ bearer: [] }] };

/** Retention for operators: delete a terminal tree now, run a sweep now. */
export async function retentionRoutes(app: FastifyInstance, deps: RetentionRouteDeps): Promise<void> {
  const typed = app.withTypeProvider<ZodTypeProvider>();
  typed.addHook('onRequest', async (request) => deps.auth.check(request));

  typed.delete(
    '/v1/admin/processes/:pid',
    {
      schema: {
        ...common,
        description:
          'Delete a terminal process and its whole subtree now (archived first when LIBOS_ARCHIVE_DIR is set); 409 `not_terminal` while any of it is live.',
        params: z.object({ pid: pidSchema }),
        response: {
          200: deleteProcessResultSchema,
          ...errorResponses([...auth, 'not_found', 'failed_precondition'], { params: true }),
        },
      },
    },
    async (request) => ({ pid: request.params.pid, ...(await deps.sweeper.deleteTree(request.params.pid)) }),
  );
  typed.post(
    '/v1/admin/gc',
    {
      schema: {
        ...common,
        description:
          'Run a retention sweep now: delete what is due in every shard no other coordinator holds.',
        response: { 200: gcReportSchema, ...errorResponses(auth) },
      },
    },
    async () => deps.sweeper.sweep(),
  );
}
