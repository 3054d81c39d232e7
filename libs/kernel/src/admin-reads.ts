import {
  type AdminMessagesResult,
  type AdminObjectEntry,
  type AdminObjectsResult,
  type AdminTreeResult,
  type AttemptView,
  adminMessagesQuerySchema,
  adminObjectsQuerySchema,
  adminTreeQuerySchema,
  type DescribeResult,
  type ListProcessesQuery,
  type ListProcessesResult,
  listProcessesQuerySchema,
  type MessageView,
  PROCESS_STATUSES,
  type ProcessStatus,
  type ProcessView,
  pendingSignalSchema,
  pidSchema,
  rootOf,
  type TreeCounts,
  type TreeCountsResult,
  type TreeNode,
  treeCountsQuerySchema,
} from '@libos/protocol';
import { z } from 'zod';
import type { KernelCore } from './core.js';
import { KernelError, parseOrThrow } from './errors.js';
import { ALL_INDEX_SHARDS } from './keys.js';
import { storedMessage } from './message-tools.js';
import { pipelined, redisCall } from './redis-client.js';
import { budgetOf, field, iso, outcomeOf, type ProcessRow, rowFromFlat, statusOf, viewOf } from './rows.js';

/** A key's hash tag (`{…}`), or the whole key when it has none: keys alike share a slot. */
function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

const stringRecordSchema = z.record(z.string(), z.string());
const stringsSchema = z.array(z.string());
const nullableStringsSchema = z.array(z.string().nullable());
const labelsSchema = z.array(z.string());
const treeHeadSchema = z.object({ truncated: z.boolean() });
/** A row's `ws`, what it waits on (as far as a tree node says it). */
const waitStateSchema = z.looseObject({
  type: z.string(),
  child_pid: z.string().optional(),
  mode: z.string().optional(),
});
const peekHeadSchema = z.object({
  total: z.number(),
  unacked: z.number(),
  acked: z.number(),
  interrupt: z.number(),
  normal: z.number(),
});
const storedAttemptsSchema = z.array(
  z.object({
    n: z.number(),
    w: z.string(),
    c: z.number(),
    e: z.number().optional(),
    o: z.string().optional(),
    r: z.string().optional(),
  }),
);
const INDEX_CURSOR = /^(\d{1,16}):(p[0-9a-z.]{4,60})$/;
const RESULT_PREVIEW_BYTES = 2_048;
const FIRST_UNREAD = 5;

function suffixOf(pid: string): number {
  const dot = pid.indexOf('.');
  return dot < 0 ? 0 : Number(pid.slice(dot + 1));
}

function badCursor(cursor: string): KernelError {
  return new KernelError('invalid_argument', `cursor: not a cursor this listing gave: ${cursor}`);
}

/** One candidate of a listing, newest first, and the cursor that resumes after it. */
interface Candidate {
  pid: string;
  cursor: string;
}
interface CandidatePage {
  items: Candidate[];
  /** No candidates after these. */
  exhausted: boolean;
}
type CandidateSource = (after: string | undefined, count: number) => Promise<CandidatePage>;
/** Creation times (ms) an index read keeps to: after `after` (exclusive), at or before `before`. */
interface CreatedBounds {
  after?: number;
  before?: number;
}
/** A member of an index set: its creation time and pid. */
interface IndexPosition {
  score: number;
  pid: string;
}

/** The index sets' order: newest first, ties by descending pid (Redis's reverse order of members). */
function newestFirst(a: IndexPosition, b: IndexPosition): number {
  return b.score - a.score || (a.pid < b.pid ? 1 : a.pid > b.pid ? -1 : 0);
}

/**
 * The operator's reads: listings with filters, a process's mailbox, objects, subtree and
 * description. They read only: nothing is acknowledged, consumed, tainted or bumped. Each read of
 * one process touches one tree's slot (one script, or one pipeline of that tree's keys).
 */
export class AdminReads {
  constructor(private readonly core: KernelCore) {}

  /**
   * Processes newest first. The candidates come from the narrowest source the filters allow (a
   * parent's children, a tree's pids, the roots, a status, or every process; the global ones
   * from the derived index, scored by creation time) and are checked against every filter; a
   * page examines at most `listScanMax` candidates, so a sparse filter may give a short page
   * with a next cursor. Cursors are stable under inserts.
   */
  async listProcesses(query: unknown = {}): Promise<ListProcessesResult> {
    const q = parseOrThrow(listProcessesQuerySchema, query, 'list processes');
    if (q.root !== undefined && q.root !== rootOf(q.root))
      throw new KernelError('invalid_argument', `root: ${q.root} is not a root pid`);
    if (q.parent !== undefined && q.root !== undefined && rootOf(q.parent) !== q.root)
      return { processes: [], next_cursor: null };
    const source = await this.sourceFor(q);
    const processes: ProcessView[] = [];
    let cursor = q.cursor;
    let scanned = 0;
    const budget = this.core.limits.listScanMax;
    // a parent's children and a tree's pids are numbered in creation order: once one is too
    // old for created_after, every later candidate is too
    const ordered = q.parent !== undefined || q.root !== undefined;
    for (;;) {
      const want = Math.min(Math.max(q.limit - processes.length, 16), budget - scanned);
      const page = await source(cursor, want);
      const rows = await this.rowsOf(page.items.map((item) => item.pid));
      for (const [index, item] of page.items.entries()) {
        scanned += 1;
        cursor = item.cursor;
        const row = rows[index];
        if (row && this.matches(row, q)) processes.push(viewOf(row));
        const last = page.exhausted && index === page.items.length - 1;
        if (processes.length === q.limit) return { processes, next_cursor: last ? null : item.cursor };
        if (ordered && row && q.created_after !== undefined && Number(field(row, 'ct')) <= q.created_after)
          return { processes, next_cursor: null };
      }
      if (page.exhausted) return { processes, next_cursor: null };
      if (scanned >= budget) return { processes, next_cursor: cursor ?? null };
    }
  }

  private matches(row: ProcessRow, q: ListProcessesQuery): boolean {
    const pid = field(row, 'pid');
    if (q.status !== undefined && field(row, 'status') !== q.status) return false;
    if (q.image !== undefined && field(row, 'image') !== q.image) return false;
    if (q.parent !== undefined && field(row, 'parent') !== q.parent) return false;
    if (q.root !== undefined && rootOf(pid) !== q.root) return false;
    if (q.roots === true && pid.includes('.')) return false;
    if (q.created_after !== undefined && Number(field(row, 'ct')) <= q.created_after) return false;
    return true;
  }

  private async sourceFor(q: ListProcessesQuery): Promise<CandidateSource> {
    if (q.parent !== undefined) return this.childrenSource(q.parent);
    if (q.root !== undefined) return this.treeSource(q.root);
    const keys = this.core.keys;
    const keyOf = (shard: number) =>
      q.roots
        ? keys.indexRoots(shard)
        : q.status !== undefined
          ? keys.indexStatus(shard, q.status)
          : keys.indexAll(shard);
    await redisCall(this.core.index.drain());
    return (after, count) => this.indexCandidates(keyOf, after, count, { after: q.created_after });
  }

  /**
   * A page of an index set (scored by creation time) over index shards, newest first after
   * `after` (`<score>:<pid>`; ties run in descending pid order). The order is one total order, so
   * the cursor means the same in every shard: each shard gives its next `count` and the merge
   * keeps the newest `count`. A page reads at most `count` members per shard. `created` bounds
   * the creation times read (ms): after `after`, and at or before `before`.
   */
  async indexCandidates(
    keyOf: (shard: number) => string,
    after: string | undefined,
    count: number,
    created: CreatedBounds = {},
    shards: readonly number[] = ALL_INDEX_SHARDS,
  ): Promise<CandidatePage> {
    let from: IndexPosition | undefined;
    if (after !== undefined) {
      const match = INDEX_CURSOR.exec(after);
      if (!match?.[1] || !match[2]) throw badCursor(after);
      from = { score: Number(match[1]), pid: match[2] };
    }
    const pages = await Promise.all(
      shards.map((shard) => this.shardCandidates(keyOf(shard), from, count, created)),
    );
    const merged = pages.flatMap((page) => page.items).sort(newestFirst);
    const items = merged.slice(0, count).map(({ score, pid }) => ({ pid, cursor: `${score}:${pid}` }));
    return { items, exhausted: merged.length <= count && pages.every((page) => page.exhausted) };
  }

  /** One shard's next `count` members of an index set after `from`, newest first. */
  private async shardCandidates(
    key: string,
    from: IndexPosition | undefined,
    count: number,
    { after: createdAfter, before: createdBefore }: CreatedBounds,
  ): Promise<{ items: IndexPosition[]; exhausted: boolean }> {
    const items: IndexPosition[] = [];
    const min = createdAfter === undefined ? '-inf' : `(${createdAfter}`;
    let max = createdBefore === undefined ? '+inf' : String(createdBefore);
    if (from !== undefined && (createdBefore === undefined || from.score <= createdBefore)) {
      // first the rest of the cursor's score (its members after the cursor's pid), then older
      if (createdAfter === undefined || from.score > createdAfter) {
        const same = await redisCall(this.core.redis.zrange(key, from.score, from.score, 'BYSCORE', 'REV'));
        for (const pid of same) {
          if (pid >= from.pid) continue;
          if (items.length === count) return { items, exhausted: false };
          items.push({ score: from.score, pid });
        }
      }
      max = `(${from.score}`;
    }
    const want = count - items.length;
    if (want <= 0) return { items, exhausted: false };
    const flat = await redisCall(
      this.core.redis.zrange(key, max, min, 'BYSCORE', 'REV', 'LIMIT', 0, want, 'WITHSCORES'),
    );
    for (let i = 0; i + 1 < flat.length; i += 2)
      items.push({ score: Number(flat[i + 1]), pid: flat[i] as string });
    return { items, exhausted: flat.length / 2 < want };
  }

  /** A parent's direct children, newest (highest spawn number) first. */
  private childrenSource(parent: string): CandidateSource {
    const key = `${this.core.keys.treeOf(parent)}k:${parent}`;
    return async (after, count) => {
      if (after !== undefined && (!pidSchema.safeParse(after).success || rootOf(after) !== rootOf(parent)))
        throw badCursor(after);
      const max = after === undefined ? '+inf' : `(${suffixOf(after)}`;
      const pids = await redisCall(
        this.core.redis.zrange(key, max, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, count),
      );
      return { items: pids.map((pid) => ({ pid, cursor: pid })), exhausted: pids.length < count };
    };
  }

  /**
   * A tree's pids, newest (highest number) first, the root last. The numbers a jump skipped (the
   * tree's `pj` gaps, see `next_number` in lib.lua) were never handed out and are stepped over.
   */
  private treeSource(root: string): CandidateSource {
    let top: number | undefined;
    let gaps: [number, number][] = [];
    return async (after, count) => {
      if (after !== undefined && (!pidSchema.safeParse(after).success || rootOf(after) !== root))
        throw badCursor(after);
      if (after === root) return { items: [], exhausted: true };
      if (top === undefined) {
        const [p, pj] = await redisCall(this.core.redis.hmget(this.core.keys.seq(root), 'p', 'pj'));
        top = Number(p ?? '0');
        gaps = (pj ?? '')
          .split(',')
          .filter((gap) => gap !== '')
          .map((gap) => gap.split(':').map(Number) as [number, number]);
      }
      const skip = (n: number) => {
        for (const [from, to] of gaps) if (n > from && n <= to) return from;
        return n;
      };
      let n = skip(after === undefined ? top : suffixOf(after) - 1);
      const items: Candidate[] = [];
      while (items.length < count && n >= 1) {
        const pid = `${root}.${n}`;
        items.push({ pid, cursor: pid });
        n = skip(n - 1);
      }
      if (items.length < count && n < 1) {
        items.push({ pid: root, cursor: root });
        return { items, exhausted: true };
      }
      return { items, exhausted: false };
    };
  }

  /**
   * HMGET `fields` of each key, in order: one pipeline per tree (the keys' hash tag), since a
   * pipeline must stay in one slot on Redis Cluster; the pipelines go out together.
   */
  async fieldsByTree(keys: string[], fields: string[]): Promise<unknown[]> {
    const byTree = new Map<string, number[]>();
    for (const [index, key] of keys.entries()) {
      const tag = hashTagOf(key);
      const indexes = byTree.get(tag);
      if (indexes) indexes.push(index);
      else byTree.set(tag, [index]);
    }
    const out: unknown[] = new Array(keys.length).fill(null);
    await Promise.all(
      [...byTree.values()].map(async (indexes) => {
        const pipeline = this.core.redis.pipeline();
        for (const index of indexes) pipeline.hmget(keys[index] as string, ...fields);
        for (const [i, value] of (await pipelined(pipeline)).entries()) out[indexes[i] as number] = value;
      }),
    );
    return out;
  }

  /**
   * Whole rows by pid (undefined where none): one pipeline per tree, since a pipeline must stay
   * in one slot on Redis Cluster; the pipelines go out together.
   */
  private async rowsOf(pids: string[]): Promise<(ProcessRow | undefined)[]> {
    const byTree = new Map<string, number[]>();
    for (const [index, pid] of pids.entries()) {
      const root = rootOf(pid);
      const indexes = byTree.get(root);
      if (indexes) indexes.push(index);
      else byTree.set(root, [index]);
    }
    const rows: (ProcessRow | undefined)[] = new Array(pids.length).fill(undefined);
    await Promise.all(
      [...byTree.values()].map(async (indexes) => {
        const pipeline = this.core.redis.pipeline();
        for (const index of indexes) pipeline.hgetall(this.core.keys.row(pids[index] as string));
        const values = await pipelined(pipeline);
        for (const [i, value] of values.entries()) {
          const flat = Object.entries(stringRecordSchema.parse(value)).flat();
          rows[indexes[i] as number] = flat.length === 0 ? undefined : rowFromFlat(flat);
        }
      }),
    );
    return rows;
  }

  /** The mailbox as it is: acknowledged and unread, filtered like `read_process_messages`. */
  async messages(pid: string, query: unknown = {}): Promise<AdminMessagesResult> {
    parseOrThrow(pidSchema, pid, 'pid');
    const q = parseOrThrow(adminMessagesQuerySchema, query, 'messages');
    const filter: Record<string, unknown> = {};
    for (const key of ['kind', 'sender', 'channel', 'correlation_id', 'reply_to', 'message_ids'] as const) {
      if (q[key] !== undefined) filter[key] = q[key];
    }
    let after = 0;
    if (q.after !== undefined) {
      if (rootOf(q.after) !== rootOf(pid))
        throw new KernelError('invalid_argument', `after: ${q.after} is not a message of ${pid}'s tree`);
      after = Number(q.after.slice(q.after.lastIndexOf('/m') + 2));
    }
    const { head, messages } = await this.peekMail(pid, filter, q.acked, after, q.limit);
    const omitted = head.total - messages.length;
    return {
      pid,
      messages,
      omitted_count: omitted,
      next_cursor: omitted > 0 ? (messages[messages.length - 1]?.message_id ?? null) : null,
      unacked_count: head.unacked,
      acked_count: head.acked,
      pending_notices: { interrupt: head.interrupt, normal: head.normal },
    };
  }

  private async peekMail(
    pid: string,
    filter: Record<string, unknown>,
    acked: boolean | undefined,
    after: number,
    limit: number,
  ): Promise<{ head: z.infer<typeof peekHeadSchema>; messages: MessageView[] }> {
    const reply = await this.core.run('mail_peek', pid, {
      pid,
      filter,
      ...(acked === undefined ? {} : { acked }),
      after,
      limit,
    });
    const head = peekHeadSchema.parse(reply.head);
    const strings = stringsSchema.parse(reply.rest);
    const messages: MessageView[] = [];
    for (let i = 0; i + 1 < strings.length; i += 2) {
      messages.push(storedMessage(strings[i] as string, strings[i + 1] as string, pid));
    }
    return { head, messages };
  }

  /** What a process owns and holds handles to, by object number, a page at a time. */
  async objects(pid: string, query: unknown = {}): Promise<AdminObjectsResult> {
    parseOrThrow(pidSchema, pid, 'pid');
    const q = parseOrThrow(adminObjectsQuerySchema, query, 'objects');
    const tree = this.core.keys.treeOf(pid);
    if (q.after !== undefined && rootOf(q.after) !== rootOf(pid))
      throw new KernelError('invalid_argument', `after: ${q.after} is not an object of ${pid}'s tree`);
    const [exists, owned, handles] = await pipelined(
      this.core.redis
        .pipeline()
        .exists(this.core.keys.row(pid))
        .smembers(`${tree}own:${pid}`)
        .hgetall(`${tree}h:${pid}`),
    );
    if (exists !== 1) throw new KernelError('not_found', `no such process ${pid}`);
    const ownedSet = new Set(stringsSchema.parse(owned));
    const handleOf = stringRecordSchema.parse(handles);
    const number = (oid: string) => Number(oid.slice(oid.lastIndexOf('/o') + 2));
    const after = q.after === undefined ? 0 : number(q.after);
    const oids = [...new Set([...ownedSet, ...Object.keys(handleOf)])]
      .filter((oid) => number(oid) > after)
      .sort((a, b) => number(a) - number(b));
    const page = oids.slice(0, q.limit);
    const pipeline = this.core.redis.pipeline();
    for (const oid of page) {
      pipeline.hmget(`${tree}o:${number(oid)}`, 'kind', 'owner', 'labels', 'version', 'ct', 'ut');
      pipeline.hstrlen(`${tree}o:${number(oid)}`, 'payload');
    }
    const values = await pipelined(pipeline);
    const objects: AdminObjectEntry[] = page.map((oid, index) => {
      const [kind, owner, labels, version, created, updated] = nullableStringsSchema.parse(values[2 * index]);
      const handle = handleOf[oid];
      return {
        oid,
        kind: kind ?? null,
        owner: owner ?? null,
        owned: ownedSet.has(oid),
        handle: handle === 'r' || handle === 'rw' ? handle : null,
        labels: labels ? labelsSchema.parse(JSON.parse(labels)) : [],
        version: version ? Number(version) : owner ? 1 : null,
        size_bytes: Number(values[2 * index + 1] ?? 0),
        created_at: created ? iso(Number(created)) : null,
        updated_at: updated ? iso(Number(updated)) : created ? iso(Number(created)) : null,
      };
    });
    return {
      pid,
      objects,
      next_cursor: oids.length > page.length ? (page[page.length - 1] ?? null) : null,
    };
  }

  /** The subtree of `pid`, breadth-first, at most `max_nodes` nodes (one script on its tree). */
  async tree(pid: string, query: unknown = {}): Promise<AdminTreeResult> {
    parseOrThrow(pidSchema, pid, 'pid');
    const q = parseOrThrow(adminTreeQuerySchema, query, 'tree');
    const max = Math.min(q.max_nodes ?? this.core.limits.treeDefaultNodes, this.core.limits.treeMaxNodes);
    const reply = await this.core.run('tree', pid, {
      pid,
      max,
      goal_bytes: this.core.limits.goalPreviewBytes,
    });
    const { truncated } = treeHeadSchema.parse(reply.head);
    const nodes = reply.rest.map((flat) => nodeOf(rowFromFlat(flat)));
    return { pid, nodes, truncated, max_nodes: max };
  }

  /**
   * Each root's descendants by status, from the counters its tree keeps (`n:<status>` on the
   * tree's counter hash, see `count_status` in lib.lua): one transaction per tree reads the
   * counters and the root's status together, so the root is taken out of the same snapshot. No
   * process row but the root's status is read, whatever the tree's size.
   */
  async treeCounts(query: unknown): Promise<TreeCountsResult> {
    const { roots } = parseOrThrow(treeCountsQuerySchema, query, 'tree counts');
    for (const root of roots)
      if (root !== rootOf(root))
        throw new KernelError('invalid_argument', `roots: ${root} is not a root pid`);
    const unique = [...new Set(roots)];
    const trees = await Promise.all(
      unique.map(async (root): Promise<TreeCounts> => {
        const [counters, status] = await pipelined(
          this.core.redis.multi().hgetall(this.core.keys.seq(root)).hget(this.core.keys.row(root), 'status'),
        );
        const fields = stringRecordSchema.parse(counters);
        if (fields.sc !== '1' || typeof status !== 'string')
          return { root, counted: fields.sc === '1', descendants: null };
        const byStatus: Partial<Record<ProcessStatus, number>> = {};
        let total = 0;
        for (const name of PROCESS_STATUSES) {
          const n = Number(fields[`n:${name}`] ?? '0') - (name === status ? 1 : 0);
          if (n > 0) {
            byStatus[name] = n;
            total += n;
          }
        }
        return { root, counted: true, descendants: { total, by_status: byStatus } };
      }),
    );
    return { trees };
  }

  /** Everything about one process: view, attempts, children, result preview, mailbox. */
  async describe(pid: string): Promise<DescribeResult> {
    parseOrThrow(pidSchema, pid, 'pid');
    const reply = await this.core.run('get', pid, { caller: '', pid });
    const row = rowFromFlat(reply.rest[0]);
    const process = viewOf(row);
    const tree = this.core.keys.treeOf(pid);
    const kids = stringsSchema.parse(await redisCall(this.core.redis.zrange(`${tree}k:${pid}`, 0, -1)));
    const pipeline = this.core.redis.pipeline();
    for (const kid of kids) pipeline.hget(this.core.keys.row(kid), 'status');
    const resultOid = process.result_oid;
    const resultKey = resultOid ? `${tree}o:${resultOid.slice(resultOid.lastIndexOf('/o') + 2)}` : undefined;
    if (resultKey) pipeline.hget(resultKey, 'payload');
    const values = await pipelined(pipeline);
    const byStatus: Record<string, number> = {};
    for (const value of values.slice(0, kids.length)) {
      const status = typeof value === 'string' ? value : 'gone';
      byStatus[status] = (byStatus[status] ?? 0) + 1;
    }
    let result: DescribeResult['result'] = null;
    const payload = resultKey ? values[kids.length] : undefined;
    if (resultOid && typeof payload === 'string') {
      const bytes = Buffer.from(payload);
      const truncated = bytes.length > RESULT_PREVIEW_BYTES;
      result = {
        oid: resultOid,
        size_bytes: bytes.length,
        preview: truncated ? cutUtf8(bytes, RESULT_PREVIEW_BYTES) : payload,
        truncated,
      };
    }
    const mail = await this.peekMail(pid, {}, false, 0, FIRST_UNREAD);
    return {
      process,
      attempts: attemptsOf(row),
      ended_at: field(row, 'et') ? iso(Number(field(row, 'et'))) : null,
      children: { total: kids.length, by_status: byStatus },
      result,
      mailbox: {
        unacked_count: mail.head.unacked,
        acked_count: mail.head.acked,
        pending_notices: { interrupt: mail.head.interrupt, normal: mail.head.normal },
        first_unread: mail.messages,
      },
    };
  }
}

/** The first `max` bytes as text, without a cut character at the end. */
function cutUtf8(bytes: Buffer, max: number): string {
  return bytes
    .subarray(0, max)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
}

export function attemptsOf(row: ProcessRow): AttemptView[] {
  const raw = field(row, 'att');
  if (!raw) return [];
  return storedAttemptsSchema.parse(JSON.parse(raw)).map((a) => ({
    attempt: a.n,
    worker: a.w,
    claimed_at: iso(a.c),
    ended_at: a.e === undefined ? null : iso(a.e),
    ended_as: a.o ?? null,
    reason: a.r ?? null,
  }));
}

function nodeOf(row: ProcessRow): TreeNode {
  const outcome = outcomeOf(row);
  const psig = field(row, 'psig');
  const ws = field(row, 'ws');
  const goal = field(row, 'goal');
  const cut = field(row, 'gcut') === '1';
  let waitingOn: string | null = null;
  if (ws) {
    const parsed = waitStateSchema.parse(JSON.parse(ws));
    waitingOn =
      parsed.type === 'child'
        ? `child ${parsed.child_pid ?? ''}`.trim()
        : parsed.type === 'children'
          ? `${parsed.mode ?? 'any'} of children`
          : 'message';
  }
  const ended = field(row, 'et');
  return {
    pid: field(row, 'pid'),
    parent_pid: field(row, 'parent') || null,
    depth: Number(field(row, 'depth')),
    status: statusOf(row),
    image: field(row, 'image') || null,
    goal: cut ? goal.replace(/\uFFFD+$/, '') : goal,
    goal_truncated: cut,
    outcome_type: outcome?.type ?? null,
    outcome_reason: outcome?.reason ?? null,
    attempt: Number(field(row, 'attempt') || '0'),
    pause_reason: field(row, 'preason') || null,
    resume_gate: field(row, 'gate') === 'host' ? 'host' : null,
    pending_signal: psig ? pendingSignalSchema.parse(JSON.parse(psig)) : null,
    waiting_on: waitingOn,
    driver: field(row, 'driver') === 'caller' ? 'caller' : 'worker',
    resource_budget: budgetOf(row),
    created_at: iso(Number(field(row, 'ct'))),
    updated_at: iso(Number(field(row, 'ut') || field(row, 'ct'))),
    ended_at: ended ? iso(Number(ended)) : null,
    child_count: Number(field(row, 'kids') || '0'),
  };
}
