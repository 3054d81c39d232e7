import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { KernelCore } from './core.js';
import { parseOrThrow } from './errors.js';
import { ALL_INDEX_SHARDS, INDEX_SHARDS } from './keys.js';

/** The bounds of a reaper's hold on its shards (ms). */
export const REAPER_HOLD_MIN_MS = 100;
export const REAPER_HOLD_MAX_MS = 86_400_000;
const holdMsSchema = z.number().int().min(REAPER_HOLD_MIN_MS).max(REAPER_HOLD_MAX_MS);

/**
 * The index shards one coordinator's reaper holds, so coordinators share the sweep of the index
 * (expired leases, lost launches) instead of each repeating all of it. A reaper is a live
 * claimant for `holdMs` after each claim (claimants.lua) and holds at most its fair share, the
 * shards over the live claimants rounded up, each by a lock (lock.lua) it extends at every
 * claim; beyond its share it lets go, so a newcomer finds shards free at its next claim. A
 * coordinator that dies stops extending: within `holdMs` its claim and locks lapse, and the
 * others take its shards at their next claim.
 */
export class ReaperShards {
  private readonly token = randomBytes(8).toString('hex');
  private held: number[] = [];
  private readonly holdMs: number;

  constructor(
    private readonly core: KernelCore,
    holdMs: number,
  ) {
    this.holdMs = parseOrThrow(holdMsSchema, holdMs, 'holdMs');
  }

  /** Renew this reaper's claim and its share of shards; the shards it holds now, ascending. */
  async claim(): Promise<number[]> {
    const { keys, scripts } = this.core;
    const live = await scripts.joinClaimants(keys.reapers, this.token, this.holdMs);
    const share = Math.ceil(INDEX_SHARDS / Math.max(live, 1));
    const excess = this.held.slice(share);
    await Promise.all(excess.map((shard) => scripts.releaseLock(keys.reaperLock(shard), this.token)));
    const kept: number[] = [];
    await Promise.all(
      this.held.slice(0, share).map(async (shard) => {
        // a lock that lapsed (a sweep that stalled) and was taken by another is theirs now
        if (await scripts.takeLock(keys.reaperLock(shard), this.token, this.holdMs)) kept.push(shard);
      }),
    );
    const free = ALL_INDEX_SHARDS.filter((shard) => !kept.includes(shard)).sort(() => Math.random() - 0.5);
    for (const shard of free) {
      if (kept.length >= share) break;
      if (await scripts.takeLock(keys.reaperLock(shard), this.token, this.holdMs)) kept.push(shard);
    }
    this.held = kept;
    return [...kept].sort((a, b) => a - b);
  }

  /** Let go of every shard and the claim (a coordinator stopping): the others take over at once. */
  async release(): Promise<void> {
    const { keys, scripts } = this.core;
    const held = this.held;
    this.held = [];
    await Promise.all(held.map((shard) => scripts.releaseLock(keys.reaperLock(shard), this.token)));
    await scripts.leaveClaimants(keys.reapers, this.token);
  }

  /** Whether this coordinator repairs the index now: one turn per `everyMs`, fleet-wide. */
  repairTurn(everyMs: number): Promise<boolean> {
    return this.core.scripts.takeLock(this.core.keys.repairTurn, randomBytes(8).toString('hex'), everyMs);
  }
}
