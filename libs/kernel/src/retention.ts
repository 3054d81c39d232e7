import { randomBytes } from 'node:crypto';
import { type ProcessView, pidSchema, rootOf, shardOf } from '@libos/protocol';
import { z } from 'zod';
import type { KernelCore } from './core.js';
import { parseOrThrow } from './errors.js';
import { luaList } from './lua-json.js';
import { dueIn, redisCall, redisNowMs } from './redis-client.js';
import { rowFromFlat, viewOf } from './rows.js';
import type { GcMark, ScriptReply } from './scripts.js';

/**
 * Fixed number of retention shards: trees are spread over them by root pid, and each is swept by
 * one coordinator at a time. Changing it strands the trees marked in the shards that disappear,
 * so it is a constant of the key layout, not a setting.
 */
export const GC_SHARDS = 16;

/** The retention shard of a tree. */
export function gcShardOf(root: string): number {
  return shardOf(root, GC_SHARDS);
}

/** What the archive keeps of a process, written before the process is deleted. */
export interface ArchiveRecord {
  archived_at: string;
  pid: string;
  root_pid: string;
  /** Its ancestors, parent first. */
  lineage: string[];
  /** Its last view: status, outcome, budget usage, times. */
  process: ProcessView;
}

/** Where summaries go before deletion; it must have kept them (e.g. fsynced) when it resolves. */
export type ArchiveSink = (records: ArchiveRecord[]) => Promise<void>;

export interface SweepOptions {
  archive?: ArchiveSink;
  /** Stop taking new trees after this long (a shard's lock outlives it). */
  maxMs?: number;
}

export interface SweepReport {
  /** Processes deleted. */
  deleted: number;
  /** Trees visited. */
  trees: number;
  /** Shards this sweep held (the others were held by another coordinator, or had nothing due). */
  shards: number;
}

const gcHeadSchema = z.object({
  deleted: luaList(z.string()).optional(),
  pids: luaList(z.string()).optional(),
  more: z.boolean().optional(),
  gone: z.boolean().optional(),
  next: z.number().optional(),
  v: z.number().optional(),
});
const lineageSchema = z.array(z.string());
const stringsSchema = z.array(z.string());

/**
 * Retention: terminal processes are deleted a retention period after their end once nothing can
 * ask for them (lua/lib_retain.lua says when). Tree scripts record due processes in their tree
 * and report the tree here (`mark`); marks are batched per shard. A sweep claims shards one at a
 * time with a short lock, so coordinators share the work instead of repeating it, and deletes
 * each due tree's processes in bounded script calls (`gcBatch` processes, `gcCost` keys each).
 */
export class Retention {
  private marks = new Map<number, Map<string, GcMark>>();
  private timer: NodeJS.Timeout | undefined;
  private inflight = new Set<Promise<void>>();

  constructor(
    private readonly core: KernelCore,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** A tree has processes due (from a script's reply). */
  mark(root: string, gc: GcMark): void {
    const shard = gcShardOf(root);
    let marks = this.marks.get(shard);
    if (!marks) {
      marks = new Map();
      this.marks.set(shard, marks);
    }
    const prior = marks.get(root);
    marks.set(root, prior ? { at: Math.min(prior.at, gc.at), v: Math.max(prior.v, gc.v) } : gc);
    this.timer ??= setTimeout(() => this.flush(), this.core.limits.indexBatchMs).unref();
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.marks;
    this.marks = new Map();
    for (const [shard, marks] of batch) {
      const base = this.core.keys.gcShard(shard);
      const list = [...marks].map(([root, mark]) => [root, mark.at, mark.v]);
      const done = this.core.scripts
        .shard(`${base}trees`, base, 'mark', JSON.stringify(list))
        .then(() => undefined)
        .catch((error: unknown) => this.onError(error))
        .finally(() => this.inflight.delete(done));
      this.inflight.add(done);
    }
  }

  /** Resolves when every mark made so far is written (or has failed). */
  async drain(): Promise<void> {
    if (this.marks.size > 0) this.flush();
    while (this.inflight.size > 0) await Promise.all([...this.inflight]);
  }

  /**
   * Delete what is due in every shard this coordinator can claim now. Safe to run from every
   * coordinator at once: a shard held by another is skipped.
   */
  async sweep(options: SweepOptions = {}): Promise<SweepReport> {
    await this.drain();
    const started = Date.now();
    const maxMs = options.maxMs ?? 10_000;
    const report: SweepReport = { deleted: 0, trees: 0, shards: 0 };
    const token = randomBytes(8).toString('hex');
    const order = [...Array(GC_SHARDS).keys()].sort(() => Math.random() - 0.5);
    // Every shard's due trees read at once: most sweeps find nothing, and one runs every few
    // seconds on an idle fleet too.
    const dues = await dueIn(
      this.core.redis,
      order.map((shard) => `${this.core.keys.gcShard(shard)}trees`),
      await redisNowMs(this.core.redis),
      100,
    );
    for (const [i, shard] of order.entries()) {
      if (Date.now() - started > maxMs) break;
      const base = this.core.keys.gcShard(shard);
      const due = dues[i] ?? [];
      if (due.length === 0) continue;
      if (!(await this.core.scripts.takeLock(`${base}lock`, token, maxMs * 3))) continue;
      report.shards += 1;
      try {
        for (const root of due) {
          if (Date.now() - started > maxMs) break;
          report.trees += 1;
          report.deleted += await this.sweepTree(root, options.archive);
        }
      } finally {
        await this.core.scripts.releaseLock(`${base}lock`, token);
      }
    }
    return report;
  }

  /** Delete the due processes of one tree, batch by batch; settle its place in its shard. */
  private async sweepTree(root: string, archive: ArchiveSink | undefined): Promise<number> {
    let deleted = 0;
    let head: z.infer<typeof gcHeadSchema>;
    // A tree with more due than a few batches is left for the next sweep: others get their turn.
    for (let batch = 0; ; batch++) {
      if (archive) {
        const peek = await this.gc(root, { op: 'peek' });
        const pids = await this.archive(peek, archive);
        head = gcHeadSchema.parse((await this.gc(root, { op: 'delete', pids, force: false })).head);
        head.more = head.more === true || pids.length >= this.core.limits.gcBatch;
      } else {
        head = gcHeadSchema.parse((await this.gc(root, { op: 'sweep' })).head);
      }
      deleted += await this.dropFromIndex(head.deleted ?? []);
      if (!head.more || batch >= 9 || (head.deleted ?? []).length === 0) break;
    }
    await this.settle(root, head);
    return deleted;
  }

  /**
   * An operator deletes a terminal process and its whole subtree now (refused with
   * `failed_precondition`/`not_terminal`, nothing deleted, while any of it is live).
   */
  async deleteTree(pid: string, archive?: ArchiveSink): Promise<{ deleted: number }> {
    parseOrThrow(pidSchema, pid, 'pid');
    const root = rootOf(pid);
    let deleted = 0;
    let head: z.infer<typeof gcHeadSchema>;
    for (;;) {
      if (archive) {
        const pids = await this.archive(await this.gc(root, { op: 'tree', pid }), archive);
        head = gcHeadSchema.parse((await this.gc(root, { op: 'delete', pids, force: true })).head);
        head.more = !head.gone && (await redisCall(this.core.redis.exists(this.core.keys.row(pid)))) === 1;
      } else {
        head = gcHeadSchema.parse((await this.gc(root, { op: 'purge', pid })).head);
      }
      const batch = head.deleted ?? [];
      deleted += await this.dropFromIndex(batch);
      if (!head.more || batch.length === 0) break;
    }
    await this.settle(root, head);
    return { deleted };
  }

  private gc(root: string, args: Record<string, unknown>): Promise<ScriptReply> {
    return this.core.run('gc', root, {
      limit: this.core.limits.gcBatch,
      cost: this.core.limits.gcCost,
      ret: this.core.limits.retentionMs,
      ...args,
    });
  }

  /** Hand a peek's summaries to the archive; the pids it kept (to delete). */
  private async archive(reply: ScriptReply, sink: ArchiveSink): Promise<string[]> {
    const head = gcHeadSchema.parse(reply.head);
    const records: ArchiveRecord[] = [];
    const archivedAt = new Date().toISOString();
    for (let i = 0; i + 1 < reply.rest.length; i += 2) {
      const view = viewOf(rowFromFlat(reply.rest[i]));
      const lineage = lineageSchema.parse(JSON.parse(stringsSchema.parse([reply.rest[i + 1]])[0] ?? '[]'));
      records.push({
        archived_at: archivedAt,
        pid: view.pid,
        root_pid: rootOf(view.pid),
        lineage,
        process: view,
      });
    }
    if (records.length > 0) await sink(records);
    return head.pids ?? [];
  }

  private async dropFromIndex(pids: string[]): Promise<number> {
    if (pids.length === 0) return 0;
    // Records of these pids still pending here would add them back after the drop.
    await this.core.index.drain();
    const byShard = this.core.keys.byIndexShard(pids, (pid) => pid);
    await Promise.all(
      [...byShard].map(([shard, dropped]) =>
        this.core.scripts.indexDrop(this.core.keys.indexGen(shard), this.core.keys.index(shard), dropped),
      ),
    );
    return pids.length;
  }

  private async settle(root: string, head: z.infer<typeof gcHeadSchema>): Promise<void> {
    await this.drain();
    const base = this.core.keys.gcShard(gcShardOf(root));
    const next = head.gone || head.next === undefined ? '' : String(head.next);
    await this.core.scripts.shard(`${base}trees`, base, 'settle', root, head.v ?? 0, next);
  }
}
