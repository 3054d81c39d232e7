import { PROCESS_STATUSES, type ProcessStatus } from '@libos/protocol';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { KernelCore } from './core.js';
import { ALL_INDEX_SHARDS } from './keys.js';
import { mastersOf, pipelined, redisCall } from './redis-client.js';
import type { IndexRecord } from './scripts.js';

/** What the index counts, summed over its shards (for metrics). */
export interface IndexCounts {
  /** Processes by status (live and retained ones: the index holds nothing deleted). */
  processes: Record<ProcessStatus, number>;
  /** Worker completions by outcome type. */
  completions: Record<string, number>;
}

const rowFieldsSchema = z.array(z.string().nullable());
const outcomeCountsSchema = z.record(z.string(), z.string());
const cardinalitySchema = z.number();
/** A tree's cascade queue, `<prefix>{<root>}:tq`: the root. */
const CASCADE_QUEUE = /\{([^}]+)\}:tq$/;

/**
 * The index as a whole: counts summed over its shards and its rebuild from the rows. Each shard
 * is one slot: its reads go out as one pipeline per shard, its writes as one script per shard.
 */
export class IndexAdmin {
  constructor(private readonly core: KernelCore) {}

  /** Processes by status and completions by type over every shard (one pipeline per shard). */
  async counts(): Promise<IndexCounts> {
    await redisCall(this.core.index.drain());
    const keys = this.core.keys;
    const processes = Object.fromEntries(PROCESS_STATUSES.map((status) => [status, 0])) as Record<
      ProcessStatus,
      number
    >;
    const completions: Record<string, number> = {};
    await Promise.all(
      ALL_INDEX_SHARDS.map(async (shard) => {
        const pipeline = this.core.redis.pipeline();
        for (const status of PROCESS_STATUSES) pipeline.zcard(keys.indexStatus(shard, status));
        pipeline.hgetall(keys.outcomeCounts(shard));
        const results = await pipelined(pipeline);
        for (const [i, status] of PROCESS_STATUSES.entries())
          processes[status] += cardinalitySchema.parse(results[i]);
        const outcomes = outcomeCountsSchema.parse(results[PROCESS_STATUSES.length]);
        for (const [type, n] of Object.entries(outcomes))
          completions[type] = (completions[type] ?? 0) + Number(n);
      }),
    );
    return { processes, completions };
  }

  /**
   * Rebuild the status and lease indexes from the rows (they are derived data): SCANs every
   * master of a Redis Cluster (each holds its share of the trees), or the one server, and writes
   * each batch's records with one script per shard. The same SCAN finds trees whose cascade of
   * terminal transitions was left unfinished (`tq`, lua/lib_terminal.lua) by a coordinator that
   * died before it marked the tree for the retention sweep, and marks them (the sweep finishes
   * the cascade). Then deletes the index of a deployment from before the index was sharded
   * (`{idx}`), which nothing reads any more.
   */
  async repair(): Promise<number> {
    let count = 0;
    for (const node of mastersOf(this.core.redis)) count += await this.repairOn(node);
    await this.core.retention.drain();
    const old = this.core.keys.unshardedIndex;
    const names = ['gen', 'all', 'roots', 'leases', 'outcomes', ...PROCESS_STATUSES.map((s) => `s:${s}`)];
    await redisCall(this.core.redis.unlink(...names.map((name) => `${old}${name}`)));
    return count;
  }

  /** The rows one server holds; its SCAN's keys live there, so one pipeline on it reads them. */
  private async repairOn(node: Redis): Promise<number> {
    const keys = this.core.keys;
    // rows (`p:<pid>`) and cascade queues (`tq`): one pass over the keyspace finds both
    const pattern = `${keys.prefix}{*}:[pt][:q]*`;
    let cursor = '0';
    let count = 0;
    do {
      const [next, scanned] = await redisCall(node.scan(cursor, 'MATCH', pattern, 'COUNT', 500));
      cursor = next;
      const found: string[] = [];
      for (const key of scanned) {
        const queue = CASCADE_QUEUE.exec(key);
        // due since forever: the sweep takes it first, whatever the clocks say
        if (queue?.[1]) this.core.retention.mark(queue[1], { at: 0, v: 0 });
        else found.push(key);
      }
      if (found.length === 0) continue;
      const pipeline = node.pipeline();
      for (const key of found) pipeline.hmget(key, 'pid', 'gen', 'status', 'lease', 'run', 'ct');
      const records: IndexRecord[] = [];
      for (const [error, value] of (await redisCall(pipeline.exec())) ?? []) {
        if (error) continue;
        const [pid, gen, status, lease, run, created] = rowFieldsSchema.parse(value);
        if (!pid || !gen || !status) continue;
        records.push([
          pid,
          Number(gen),
          status,
          run === 'live' ? Number(lease ?? '0') : 0,
          Number(created ?? '0'),
        ]);
      }
      await Promise.all(
        [...keys.byIndexShard(records, (record) => record[0])].map(([shard, batch]) =>
          this.core.scripts.index(keys.indexGen(shard), keys.index(shard), batch),
        ),
      );
      count += records.length;
    } while (cursor !== '0');
    return count;
  }
}
