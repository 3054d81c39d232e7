import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';

export const BOARD_PATH = '/admin/queues';

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
      board.addQueue(new BullMQAdapter(queue, { readOnlyMode: false }));
    },
  };
}
