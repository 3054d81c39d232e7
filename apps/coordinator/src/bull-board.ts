import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { launchJobId, launchJobSchema, pidSchema, poolSchema } from '@libos/protocol';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Launcher } from './launcher.js';

export const BOARD_PATH = '/admin/queues';

/**
 * A launch job's link to its process page in the console: Bull Board draws it on the job's card
 * (in the queue's list and on the job's page) as a link opening in a new tab.
 */
export function processLink(job: { data: unknown }): { href: string; displayText: string } | undefined {
  const parsed = launchJobSchema.safeParse(job.data);
  if (!parsed.success) return undefined;
  const { pid, attempt } = parsed.data;
  return { href: `/ui/#/p/${encodeURIComponent(pid)}`, displayText: `process ${pid} (attempt ${attempt})` };
}

/**
 * Bull Board over the launch queues. Queues appear as pools become known (images registered,
 * launches enqueued). The caller guards the path with admin auth.
 */
export interface BullBoard {
  show(queue: Queue): void;
}

export async function mountBullBoard(app: FastifyInstance): Promise<BullBoard> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  const board = createBullBoard({
    queues: [],
    serverAdapter,
    // The header links to the console, where a job's process (tree, budget, logs) is.
    options: {
      uiConfig: { boardTitle: 'libos launches', miscLinks: [{ text: 'libos console', url: '/ui/' }] },
    },
  });
  const shown = new Set<string>();
  await app.register(serverAdapter.registerPlugin(), { prefix: BOARD_PATH });
  return {
    show(queue: Queue): void {
      if (shown.has(queue.name)) return;
      shown.add(queue.name);
      board.addQueue(
        new BullMQAdapter(queue, {
          readOnlyMode: false,
          externalJobUrl: (job) => processLink(job) ?? { href: '/ui/', displayText: 'libos console' },
        }),
      );
    },
  };
}

/** Bull Board's page of one job. */
export function boardJobPath(queue: string, jobId: string): string {
  return `${BOARD_PATH}/queue/${encodeURIComponent(queue)}/${encodeURIComponent(jobId)}`;
}

/**
 * `/admin/launch-jobs/:pool/:pid/:attempt` redirects to the launch job's board page: which of the
 * pool's queues holds it depends on the tree and LIBOS_LAUNCH_SHARDS, known here, not in the
 * console. Registered in the board's scope, behind the same admin auth.
 */
export function launchJobRedirect(app: FastifyInstance, launcher: Launcher): void {
  app.withTypeProvider<ZodTypeProvider>().get(
    '/admin/launch-jobs/:pool/:pid/:attempt',
    {
      schema: {
        hide: true,
        params: z.object({ pool: poolSchema, pid: pidSchema, attempt: z.coerce.number().int().min(1) }),
      },
    },
    async (request, reply) => {
      const { pool, pid, attempt } = request.params;
      return reply.redirect(boardJobPath(launcher.queueOf(pool, pid).name, launchJobId(pid, attempt)), 302);
    },
  );
}
