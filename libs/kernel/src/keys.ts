import { rootOf, shardOf } from '@libos/protocol';
import type { WakeTopic } from './wake-hub.js';

/**
 * Fixed number of index shards: a tree's index records all go to its root's shard, `{idx<n>}`.
 * Changing it strands the records of the shards that disappear (until `repairIndex`), so it is
 * a constant of the key layout, not a setting.
 */
export const INDEX_SHARDS = 16;

/** Every index shard's number, 0 to INDEX_SHARDS - 1. */
export const ALL_INDEX_SHARDS: readonly number[] = [...Array(INDEX_SHARDS).keys()];

/**
 * The key layout. Every key of one process tree carries the hash tag `{<root>}`, so each script
 * touches one slot and trees spread over shards. The global, derived indexes are sharded by
 * tree (`{idx<n>}`), so no one slot carries every transition.
 */
export class Keys {
  constructor(readonly prefix: string) {}

  /** `<prefix>{<root>}:`, the base every tree key and channel starts with. */
  tree(root: string): string {
    return `${this.prefix}{${root}}:`;
  }
  treeOf(pidOrId: string): string {
    return this.tree(rootOf(pidOrId));
  }
  /** The tree's counter hash: the declared key of every tree script. */
  seq(root: string): string {
    return `${this.tree(root)}seq`;
  }
  row(pid: string): string {
    return `${this.treeOf(pid)}p:${pid}`;
  }
  /** Terminal transitions (`<pid> <status> <ms>`), published on the tree's `x` channel. */
  exitTopic(pid: string): WakeTopic {
    return { channel: `${this.treeOf(pid)}x`, key: pid };
  }
  /** New mail (`<pid> <message id>`), on the tree's `m` channel. */
  mailTopic(pid: string): WakeTopic {
    return { channel: `${this.treeOf(pid)}m`, key: pid };
  }
  /** The ids of messages whose notice is still due: `mi` interrupts, `mn` normal ones. */
  notices(kind: 'mi' | 'mn', pid: string): string {
    return `${this.treeOf(pid)}${kind}:${pid}`;
  }
  /**
   * Row changes of one tree (`<root> [[pid, gen, status], ...]`, one publish per script that
   * changed or created rows; lease renewals excluded), on the tree's `ev` channel: the console's
   * live view listens to a whole tree with one topic.
   */
  treeTopic(root: string): WakeTopic {
    return { channel: `${this.tree(root)}ev`, key: root };
  }
  /** Signal notices for a live execution (`<pid> <json>`), on the tree's `ctl` channel. */
  controlTopic(pid: string): WakeTopic {
    return { channel: `${this.treeOf(pid)}ctl`, key: pid };
  }
  /** One attempt's child log: a stream of lines `s` (o|e), `t` (ms), `l` (text). */
  log(pid: string, attempt: number): string {
    return `${this.treeOf(pid)}log:${pid}:${attempt}`;
  }
  /** A process's log bookkeeping: `<attempt>:c` bytes counted, `<attempt>:d` dropped, `<attempt>:e` ended. */
  logMeta(pid: string): string {
    return `${this.treeOf(pid)}logm:${pid}`;
  }
  /** New log lines or a log's end (`<pid> <attempt>`), on the tree's `lg` channel. */
  logTopic(pid: string): WakeTopic {
    return { channel: `${this.treeOf(pid)}lg`, key: pid };
  }
  /**
   * An index shard's base `<prefix>{idx<n>}:`: its `gen`, `s:<status>`, `all`, `roots`,
   * `leases`, `outcomes` and the `reaper` lock, all in one slot.
   */
  index(shard: number): string {
    return `${this.prefix}{idx${shard}}:`;
  }
  /** The index shard of a process: its tree's. */
  indexShardOf(pidOrId: string): number {
    return shardOf(rootOf(pidOrId), INDEX_SHARDS);
  }
  /** Items by the index shard of their process (one script call per shard). */
  byIndexShard<T>(items: readonly T[], pidOf: (item: T) => string): Map<number, T[]> {
    const groups = new Map<number, T[]>();
    for (const item of items) {
      const shard = this.indexShardOf(pidOf(item));
      const group = groups.get(shard);
      if (group) group.push(item);
      else groups.set(shard, [item]);
    }
    return groups;
  }
  /** pid -> `<state_generation>:<status>`, the guard of the shard's index. */
  indexGen(shard: number): string {
    return `${this.index(shard)}gen`;
  }
  indexStatus(shard: number, status: string): string {
    return `${this.index(shard)}s:${status}`;
  }
  indexAll(shard: number): string {
    return `${this.index(shard)}all`;
  }
  /** Root pids (scored by creation time, like `all`). */
  indexRoots(shard: number): string {
    return `${this.index(shard)}roots`;
  }
  leases(shard: number): string {
    return `${this.index(shard)}leases`;
  }
  /** Worker completions by outcome type (derived, for metrics; summed over the shards). */
  outcomeCounts(shard: number): string {
    return `${this.index(shard)}outcomes`;
  }
  /** The lock of the coordinator that reaps the shard (token of its holder). */
  reaperLock(shard: number): string {
    return `${this.index(shard)}reaper`;
  }
  /** The base of the index before it was sharded (one slot, `{idx}`): `repairIndex` deletes it. */
  get unshardedIndex(): string {
    return `${this.prefix}{idx}:`;
  }
  /** The live reapers (zset token -> when its claim lapses): how many share the index shards. */
  get reapers(): string {
    return `${this.prefix}{reap}:live`;
  }
  /** Held by the coordinator whose turn it is to repair the index (one per period, fleet-wide). */
  get repairTurn(): string {
    return `${this.prefix}{reap}:repair`;
  }
  /** A retention sweep shard's base `<prefix>{gc<n>}:` (its `trees` zset, `v` hash, `lock`). */
  gcShard(n: number): string {
    return `${this.prefix}{gc${n}}:`;
  }
  get images(): string {
    return `${this.prefix}images`;
  }
}
