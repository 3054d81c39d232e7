import { rootOf } from '@libos/protocol';
import type { WakeTopic } from './wake-hub.js';

/**
 * The key layout. Every key of one process tree carries the hash tag `{<root>}`, so each script
 * touches one slot and trees spread over shards. Global, derived indexes share the tag `{idx}`.
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
  get index(): string {
    return `${this.prefix}{idx}:`;
  }
  get indexGen(): string {
    return `${this.index}gen`;
  }
  indexStatus(status: string): string {
    return `${this.index}s:${status}`;
  }
  get indexAll(): string {
    return `${this.index}all`;
  }
  /** Root pids (scored by creation time, like `all`). */
  get indexRoots(): string {
    return `${this.index}roots`;
  }
  get leases(): string {
    return `${this.index}leases`;
  }
  /** Worker completions by outcome type (derived, for metrics). */
  get outcomeCounts(): string {
    return `${this.index}outcomes`;
  }
  /** A retention sweep shard's base `<prefix>{gc<n>}:` (its `trees` zset, `v` hash, `lock`). */
  gcShard(n: number): string {
    return `${this.prefix}{gc${n}}:`;
  }
  get images(): string {
    return `${this.prefix}images`;
  }
}
