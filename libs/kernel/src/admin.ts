import {
  type AdminMessagesResult,
  type AdminObject,
  type AdminObjectsResult,
  type AdminTreeResult,
  type AdminWaitResult,
  adminSignalArgsSchema,
  adminWaitArgsSchema,
  BUDGET_DIMENSIONS,
  type Capability,
  type CreateRootResult,
  createRootArgsSchema,
  type DescribeResult,
  IMAGE_READ_RIGHT,
  type ImageView,
  imageResource,
  isTerminal,
  jsonValueSchema,
  type Launch,
  type ListProcessesResult,
  oidSchema,
  type ProcessView,
  pidSchema,
  SPAWN_RESOURCE,
  SPAWN_RIGHT,
  type ToolResult,
  type TreeCountsResult,
} from '@libos/protocol';
import { z } from 'zod';
import { AdminReads } from './admin-reads.js';
import { budgetUnits, type CallOptions, type KernelCore, storedCapability } from './core.js';
import { KernelError, parseOrThrow } from './errors.js';
import { IndexAdmin, type IndexCounts } from './index-admin.js';
import { ALL_INDEX_SHARDS } from './keys.js';
import type { ProcessTools } from './process-tools.js';
import { redisCall } from './redis-client.js';
import { field, outcomeOf, rowFromFlat, statusOf, viewOf } from './rows.js';
import { mintToken, newRootPid } from './tokens.js';

/** A runnable launch as the reaper checks it against its queue. */
export interface StaleLaunch {
  pid: string;
  attempt: number;
  pool: string;
}

// Built once, not per call: building a zod schema costs more than parsing with it.
const storedObjectSchema = z.record(z.string(), z.string());
const labelsSchema = z.array(z.string());
const indexFieldsSchema = z.array(z.string().nullable());

/** The grants a root gets when `capabilities` is omitted: it may spawn and use every image. */
export const DEFAULT_ROOT_CAPABILITIES: Capability[] = [
  { resource: SPAWN_RESOURCE, rights: [SPAWN_RIGHT], delegable: true },
  { resource: imageResource('*'), rights: [IMAGE_READ_RIGHT], delegable: true },
];

const createHeadSchema = z.object({ pid: z.string() });

function normalizeAbsolute(path: string): string {
  if (!path.startsWith('/') || path.includes('\0')) {
    throw new KernelError('invalid_argument', `cwd must be an absolute path: ${path}`, { reason: 'path' });
  }
  const parts: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (parts.length === 0)
        throw new KernelError('invalid_argument', `cwd climbs above /: ${path}`, { reason: 'path' });
      parts.pop();
    } else parts.push(segment);
  }
  return `/${parts.join('/')}`;
}

/** Operator operations: images, roots, listing, signals, index repair. */
export class AdminOps {
  constructor(
    private readonly core: KernelCore,
    private readonly processes: ProcessTools,
  ) {
    this.reads = new AdminReads(core);
    this.index = new IndexAdmin(core);
  }

  private readonly reads: AdminReads;
  private readonly index: IndexAdmin;

  putImage(name: string, spec: unknown): Promise<ImageView> {
    return this.core.images.put(name, spec);
  }

  async getImage(name: string): Promise<ImageView> {
    const view = await this.core.images.get(name);
    if (!view) throw new KernelError('not_found', `no image ${name}`, { reason: 'unknown_image' });
    return view;
  }

  listImages(): Promise<ImageView[]> {
    return this.core.images.list();
  }

  /**
   * A root process (a new tree). Caller-driven roots are `running` and get a token; launched
   * roots (`launch: true`) are `runnable` at attempt 1, get their token from their worker at claim.
   */
  async createRoot(input: unknown): Promise<CreateRootResult> {
    const args = parseOrThrow(createRootArgsSchema, input, 'create root');
    const spec = args.image === undefined ? undefined : await this.core.images.require(args.image);
    if (args.launch && !spec)
      throw new KernelError('invalid_argument', 'a launched root needs an image', { reason: 'no_image' });
    const explicit = budgetUnits(args.resource_budget);
    const defaults = budgetUnits(spec?.default_budget);
    const budget: Record<string, number> = {};
    for (const dimension of BUDGET_DIMENSIONS)
      budget[dimension] =
        explicit[dimension] ??
        defaults[dimension] ??
        (dimension === 'object_bytes' ? this.core.limits.treeObjectBytes : -1);
    const cwd = normalizeAbsolute(args.cwd ?? spec?.cwd ?? '/');
    const caps = (args.capabilities ?? DEFAULT_ROOT_CAPABILITIES).map(storedCapability);
    for (let attempt = 0; ; attempt += 1) {
      const pid = newRootPid();
      const minted = args.launch ? undefined : mintToken(pid);
      try {
        const reply = await this.core.run('create_root', pid, {
          pid,
          goal: args.goal,
          ...(args.input === undefined ? {} : { input: this.core.json(args.input, 'input') }),
          ...(args.schema === undefined ? {} : { schema: this.core.json(args.schema, 'schema') }),
          image: args.image ?? '',
          ispec: spec ? JSON.stringify(spec) : '',
          idef: defaults,
          skills: spec?.skills ?? [],
          pool: spec?.pool ?? 'default',
          cwd,
          caps,
          clearance: args.clearance ?? ['*'],
          budget,
          launch: args.launch,
          th: minted?.tokenHash ?? '',
          retention_ms: args.retention_ms ?? this.core.limits.retentionMs,
        });
        const row = rowFromFlat(reply.rest[0]);
        createHeadSchema.parse(reply.head);
        if (args.launch) await this.core.launch(row);
        return { pid, token: minted?.token ?? null, status: statusOf(row) };
      } catch (error) {
        const taken = error instanceof KernelError && error.code === 'failed_precondition' && attempt < 3;
        if (!taken) throw error;
      }
    }
  }

  async getProcess(pid: string): Promise<ProcessView> {
    parseOrThrow(pidSchema, pid, 'pid');
    const reply = await this.core.run('get', pid, { caller: '', pid });
    return viewOf(rowFromFlat(reply.rest[0]));
  }

  /**
   * Processes newest first, filtered by status, root, parent, roots only, image, created_after,
   * with a cursor stable under inserts (see `AdminReads.listProcesses`).
   */
  listProcesses(query: unknown = {}): Promise<ListProcessesResult> {
    return this.reads.listProcesses(query);
  }

  /** A process's mailbox, acknowledged and unread, filtered; never acknowledges or consumes. */
  messages(pid: string, query: unknown = {}): Promise<AdminMessagesResult> {
    return this.reads.messages(pid, query);
  }

  /** The objects a process owns or holds a handle to, by object number. */
  objects(pid: string, query: unknown = {}): Promise<AdminObjectsResult> {
    return this.reads.objects(pid, query);
  }

  /** A process's subtree, breadth-first, bounded (`truncated`). */
  tree(pid: string, query: unknown = {}): Promise<AdminTreeResult> {
    return this.reads.tree(pid, query);
  }

  /** Roots' descendants by status, from the counters each tree keeps (no row read per process). */
  treeCounts(query: unknown): Promise<TreeCountsResult> {
    return this.reads.treeCounts(query);
  }

  /** Everything about one process (`libos describe`). */
  describe(pid: string): Promise<DescribeResult> {
    return this.reads.describe(pid);
  }

  /**
   * Worker-driven runnable processes whose row has not changed since `before` (ms since the
   * epoch): launches that may have been recorded but never enqueued (the reaper checks their
   * jobs). Reads six fields per runnable row, not whole views, a page at a time, over `shards`
   * (every index shard, or those the reaper holds). Rows created after `before` are not read:
   * the index is scored by creation time, so a page starts at the newest row old enough.
   */
  async staleLaunches(
    before: number,
    cursor?: string,
    limit = 500,
    shards: readonly number[] = ALL_INDEX_SHARDS,
  ): Promise<{ launches: StaleLaunch[]; next_cursor: string | null }> {
    await redisCall(this.core.index.drain());
    const candidates = await this.reads.indexCandidates(
      (shard) => this.core.keys.indexStatus(shard, 'runnable'),
      cursor,
      limit,
      { before },
      shards,
    );
    const page = candidates.items.map((item) => item.pid);
    const last = candidates.items[candidates.items.length - 1];
    const next_cursor = candidates.exhausted || !last ? null : last.cursor;
    const values = await this.reads.fieldsByTree(
      page.map((pid) => this.core.keys.row(pid)),
      ['status', 'driver', 'attempt', 'pool', 'ut', 'ct'],
    );
    const launches: StaleLaunch[] = [];
    for (const [index, value] of values.entries()) {
      const [status, driver, attempt, pool, updated, created] = indexFieldsSchema.parse(value);
      const pid = page[index];
      const since = Number(updated ?? created ?? Number.POSITIVE_INFINITY);
      if (!pid || status !== 'runnable' || driver === 'caller' || since > before) continue;
      launches.push({ pid, attempt: Number(attempt ?? '1'), pool: pool || 'default' });
    }
    return { launches, next_cursor };
  }

  /** An operator's signal: any nonterminal process; resume may clear a host-only gate. */
  signal(pid: string, input: unknown): Promise<ToolResult<'signal_child_process'>> {
    parseOrThrow(pidSchema, pid, 'pid');
    const args = parseOrThrow(adminSignalArgsSchema, input, 'signal');
    return this.processes.signal(undefined, { child_pid: pid, ...args });
  }

  /**
   * An operator's wait on any process (a launched root, say): observe, or block until it is
   * terminal (long-poll window, AbortSignal). Records nothing: an operator is not a process.
   */
  async wait(pid: string, input: unknown = {}, options?: CallOptions): Promise<AdminWaitResult> {
    parseOrThrow(pidSchema, pid, 'pid');
    const args = parseOrThrow(adminWaitArgsSchema, input ?? {}, 'wait');
    const observe = async (): Promise<AdminWaitResult> => {
      const reply = await this.core.run('get', pid, { caller: '', pid });
      const row = rowFromFlat(reply.rest[0]);
      const status = statusOf(row);
      return {
        ready: isTerminal(status),
        pid,
        status,
        outcome: outcomeOf(row),
        result_oid: field(row, 'result') || null,
        state_generation: Number(field(row, 'gen')),
      };
    };
    if (!args.block) return observe();
    return this.core.blocking(this.core.keys.exitTopic(pid), observe, (result) => result.ready, options);
  }

  /** An operator reads any object (no handle, no taint): e.g. a root's result. */
  async readObject(oid: string): Promise<AdminObject> {
    parseOrThrow(oidSchema, oid, 'oid');
    const key = `${this.core.keys.treeOf(oid)}o:${oid.slice(oid.lastIndexOf('/o') + 2)}`;
    const stored = storedObjectSchema.parse(await redisCall(this.core.redis.hgetall(key)));
    if (!stored.payload || !stored.owner) {
      throw new KernelError('not_found', `object ${oid} does not exist or was released`, {
        reason: 'released',
      });
    }
    return {
      oid,
      payload: jsonValueSchema.parse(JSON.parse(stored.payload)),
      owner: stored.owner,
      labels: labelsSchema.parse(JSON.parse(stored.labels || '[]')),
      version: Number(stored.version ?? '1'),
    };
  }

  /** The launch of a runnable process, to enqueue again if its job was lost. */
  async launchOf(pid: string): Promise<Launch> {
    parseOrThrow(pidSchema, pid, 'pid');
    const reply = await this.core.run('get', pid, { caller: '', pid });
    const row = rowFromFlat(reply.rest[0]);
    if (field(row, 'status') !== 'runnable') {
      throw new KernelError('failed_precondition', `${pid} is ${field(row, 'status')}, not runnable`, {
        reason: 'not_runnable',
      });
    }
    return this.core.launch(row);
  }

  /**
   * Rebuild the status and lease indexes from the rows (they are derived data), every shard;
   * deletes the unsharded index of an older deployment (see `IndexAdmin.repair`).
   */
  repairIndex(): Promise<number> {
    return this.index.repair();
  }

  /** Processes by status and worker completions by type, summed over the index shards. */
  indexCounts(): Promise<IndexCounts> {
    return this.index.counts();
  }
}
