/**
 * The shard of a tree among `shards`: FNV-1a (32 bit) of its root pid. The one hash behind every
 * per-tree spread: the kernel's index and retention shards and the launch queues' shards, so a
 * tree's keys, index records and launches stay put as long as the shard count does.
 */
export function shardOf(root: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < root.length; i++) {
    hash ^= root.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}
