import type { Kernel } from '@libos/kernel';
import {
  adminMessagesQuerySchema,
  adminMessagesResultSchema,
  adminObjectsQuerySchema,
  adminObjectsResultSchema,
  adminTreeQuerySchema,
  adminTreeResultSchema,
  describeResultSchema,
  pidSchema,
  treeCountsQuerySchema,
  treeCountsResultSchema,
} from '@libos/protocol';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorResponses } from './responses.js';

/** A bad pid or query (400), no or a wrong admin token (401, 403), no such process (404). */
const errors = errorResponses(['invalid_argument', 'unauthenticated', 'permission_denied', 'not_found'], {
  params: true,
  query: true,
});
const common = { tags: ['admin'], security: [{ bearer: [] }] };
const params = z.object({ pid: pidSchema });

/**
 * The operator's reads of one process (registered inside the admin scope, behind the admin
 * token): mailbox, objects, subtree, description. They change nothing.
 */
export function registerProcessReads(app: FastifyInstance, kernel: Kernel): void {
  const typed = app.withTypeProvider<ZodTypeProvider>();
  typed.get(
    '/v1/admin/processes/:pid/messages',
    {
      schema: {
        ...common,
        description:
          "A process's mailbox, acknowledged and unread, with the filters of read_process_messages, in arrival order. Never acknowledges, consumes a notice or taints: `after` pages on.",
        params,
        querystring: adminMessagesQuerySchema,
        response: { 200: adminMessagesResultSchema, ...errors },
      },
    },
    async (request) => kernel.admin.messages(request.params.pid, request.query),
  );
  typed.get(
    '/v1/admin/processes/:pid/objects',
    {
      schema: {
        ...common,
        description:
          'The objects a process owns or holds a handle to (oid, kind, owner, handle, labels, version, size), by object number.',
        params,
        querystring: adminObjectsQuerySchema,
        response: { 200: adminObjectsResultSchema, ...errors },
      },
    },
    async (request) => kernel.admin.objects(request.params.pid, request.query),
  );
  typed.get(
    '/v1/admin/processes/:pid/tree',
    {
      schema: {
        ...common,
        description:
          "A process's subtree, breadth-first with siblings in spawn order, each node with status, outcome, budgets and times; at most `max_nodes` nodes (default 2000, at most LIBOS_TREE_MAX_NODES), `truncated` when there are more.",
        params,
        querystring: adminTreeQuerySchema,
        response: { 200: adminTreeResultSchema, ...errors },
      },
    },
    async (request) => kernel.admin.tree(request.params.pid, request.query),
  );
  typed.get(
    '/v1/admin/trees/counts',
    {
      schema: {
        ...common,
        description:
          "Each root's descendants (its tree's processes but the root) by status, from counters the tree keeps at every spawn, transition and deletion: no process row is read, whatever the tree's size. `roots`: comma-separated root pids, at most 200 (a page of `GET /v1/admin/processes?roots=true`). A tree created before trees kept counts answers `counted: false`, `descendants: null`; a deleted tree `descendants: null`.",
        querystring: treeCountsQuerySchema,
        response: {
          200: treeCountsResultSchema,
          ...errorResponses(['invalid_argument', 'unauthenticated', 'permission_denied'], { query: true }),
        },
      },
    },
    async (request) => kernel.admin.treeCounts(request.query),
  );
  typed.get(
    '/v1/admin/processes/:pid/describe',
    {
      schema: {
        ...common,
        description:
          'Everything about one process: its view, attempts (worker, claimed and ended times, how each ended), children by status, a result preview and its mailbox counts with the first unread messages.',
        params,
        response: { 200: describeResultSchema, ...errors },
      },
    },
    async (request) => kernel.admin.describe(request.params.pid),
  );
}
