import {
  type ClaimedLaunch,
  type CompleteResult,
  type Completion,
  type ControlNotice,
  claimArgsSchema,
  completionSchema,
  controlNoticeSchema,
  type Outcome,
  outcomeTypeOfTerminal,
  pendingSignalSchema,
  pidSchema,
  processStatusSchema,
  type RenewResult,
  rootOf,
} from '@libos/protocol';
import { z } from 'zod';
import type { KernelCore } from './core.js';
import { KernelError, parseOrThrow } from './errors.js';
import { ALL_INDEX_SHARDS } from './keys.js';
import { dueIn, redisCall, redisNowMs } from './redis-client.js';
import {
  budgetOf,
  field,
  grantsOf,
  imageSpecOf,
  iso,
  parseInput,
  parseSchema,
  pathsOf,
  rowFromFlat,
  statusOf,
  toUnits,
} from './rows.js';
import { newFence } from './tokens.js';

const renewHeadSchema = z.object({ status: processStatusSchema, psig: z.string(), lease: z.number() });
const completeHeadSchema = z.object({
  status: processStatusSchema,
  result_oid: z.string(),
  gen: z.number(),
  /** The script counted the completion in the index itself (one server: `indexInlineMax`). */
  ixc: z.literal(true).optional(),
});
const recoverHeadSchema = z.object({ recovered: z.boolean(), gone: z.boolean().optional() });

export interface ClaimOptions {
  workerId: string;
  /** sha256 hex of the token secret the worker minted (see `mintToken`). */
  tokenHash: string;
  leaseMs: number;
}

export interface Recovery {
  pid: string;
  status: 'paused' | 'killed';
}

/** The transitions a worker drives, and the reaper's recovery of expired leases. */
export class WorkerOps {
  constructor(private readonly core: KernelCore) {}

  /**
   * runnable (this attempt) -> running with a new fence; anything else is refused. The lease is
   * in the status index when this resolves.
   */
  async claim(pid: string, attempt: number, options: ClaimOptions): Promise<ClaimedLaunch> {
    parseOrThrow(pidSchema, pid, 'pid');
    const args = parseOrThrow(
      claimArgsSchema,
      { worker_id: options.workerId, token_hash: options.tokenHash, lease_ms: options.leaseMs },
      'claim',
    );
    const fence = newFence();
    const reply = await this.core.run('claim', pid, {
      pid,
      attempt,
      worker: args.worker_id,
      th: args.token_hash,
      lease_ms: args.lease_ms,
      fence,
      att_max: this.core.limits.attemptHistory,
    });
    // The reaper finds leases through the index: the lease is there before the child can run
    // (written by the script itself on one server, else flushed here).
    if (reply.index.length > 0) await this.core.index.drain();
    const row = rowFromFlat(reply.rest[0]);
    const parent = field(row, 'parent');
    const imageSpec = imageSpecOf(row);
    if (!imageSpec) {
      throw new KernelError('failed_precondition', `${pid} has no image: nothing to launch`, {
        reason: 'not_runnable',
      });
    }
    return {
      pid,
      parent_pid: parent || null,
      root_pid: rootOf(pid),
      attempt,
      attempt_id: `${pid}:${attempt}`,
      // the row's: a retried claim that had been applied keeps the first call's fence
      fence: field(row, 'fence') || fence,
      goal: field(row, 'goal'),
      input: parseInput(row),
      schema: parseSchema(row),
      image: field(row, 'image'),
      image_spec: imageSpec,
      cwd: field(row, 'cwd'),
      inherited_paths: pathsOf(row),
      capabilities: grantsOf(row),
      resource_budget: budgetOf(row),
      lease_expires_at: iso(Number(field(row, 'lease'))),
    };
  }

  /** Extend the lease; answers what the worker must reconcile (paused, a pending kill). */
  async renew(pid: string, attempt: number, fence: string, leaseMs: number): Promise<RenewResult> {
    parseOrThrow(pidSchema, pid, 'pid');
    const reply = await this.core.run('renew', pid, { pid, attempt, fence, lease_ms: leaseMs });
    const head = renewHeadSchema.parse(reply.head);
    return {
      status: head.status,
      paused: head.status === 'paused',
      pending_signal: head.psig ? pendingSignalSchema.parse(JSON.parse(head.psig)) : null,
      lease_expires_at: iso(head.lease),
    };
  }

  /**
   * The attempt's ending: `captured` -> exited with the report as a PROCESS_RESULT object, any
   * other terminal -> failed with its typed outcome, a pending cancel/terminate -> killed.
   * Usage is charged up the chain. A superseded attempt is refused (`failed_precondition`).
   */
  async complete(pid: string, attempt: number, fence: string, input: Completion): Promise<CompleteResult> {
    parseOrThrow(pidSchema, pid, 'pid');
    const completion = parseOrThrow(completionSchema, input, 'completion');
    let type = outcomeTypeOfTerminal(completion.terminal.type);
    let reason = completion.terminal.reason;
    let report: string | undefined;
    if (type === 'completed') {
      report = JSON.stringify(completion.report ?? null);
      if (Buffer.byteLength(report) > this.core.limits.maxPayloadBytes) {
        // Never lose a completion: an oversized report fails the attempt instead.
        type = 'failed';
        reason = `the report exceeds ${this.core.limits.maxPayloadBytes} bytes`;
        report = undefined;
      }
    }
    const usage = completion.usage;
    const outcome: Outcome = {
      type,
      ...(reason === undefined ? {} : { reason }),
      attempt_id: `${pid}:${attempt}`,
      ...(completion.exit_code === undefined ? {} : { exit_code: completion.exit_code }),
      usage,
      steps: usage.steps,
      ...(completion.unaccounted === undefined ? {} : { unaccounted: completion.unaccounted }),
    };
    const reply = await this.core.run('complete', pid, {
      pid,
      attempt,
      fence,
      status: type === 'completed' ? 'exited' : 'failed',
      outcome,
      ...(report === undefined ? {} : { report }),
      usage: {
        tokens: usage.prompt_tokens + usage.completion_tokens,
        ...(usage.cost_usd === undefined ? {} : { cost_usd: toUnits('cost_usd', usage.cost_usd) }),
        steps: usage.steps,
        wall_ms: usage.wall_ms,
      },
    });
    const head = completeHeadSchema.parse(reply.head);
    // Derived, for metrics. Unless the script counted it, it goes with this completion's index
    // batch: a crash before that is written loses one count, never a completion.
    if (!head.ixc) this.core.index.count(pid, head.status === 'killed' ? 'killed' : type);
    return {
      status: head.status,
      result_oid: head.result_oid || null,
      state_generation: head.gen,
    };
  }

  /**
   * Recover attempts whose lease expired (by Redis's clock): paused with reason stale_execution
   * behind a host-only gate, or killed when a cancel/terminate was pending. Never re-run. Looks at
   * most `limit` expired leases in each of `shards` (the reaper passes the shards it holds).
   */
  async reapExpired(limit = 100, shards: readonly number[] = ALL_INDEX_SHARDS): Promise<Recovery[]> {
    await this.core.index.drain();
    const now = await redisNowMs(this.core.redis);
    const recovered: Recovery[] = [];
    const expired = await dueIn(
      this.core.redis,
      shards.map((shard) => this.core.keys.leases(shard)),
      now,
      limit,
    );
    for (const [i, shard] of shards.entries()) {
      const leases = this.core.keys.leases(shard);
      for (const pid of expired[i] ?? []) {
        const reply = await this.core.run('recover', pid, { pid });
        const head = recoverHeadSchema.parse(reply.head);
        if (head.gone) await redisCall(this.core.redis.zrem(leases, pid));
        if (head.recovered) {
          const status = statusOf(rowFromFlat(reply.rest[0]));
          recovered.push({ pid, status: status === 'killed' ? 'killed' : 'paused' });
        }
      }
    }
    // The recoveries' records leave the lease index before the caller lets go of the shards.
    await this.core.index.drain();
    return recovered;
  }

  /** Listen for signal notices of one process; resolves once subscribed. Returns the release. */
  async watchControl(pid: string, listener: (notice: ControlNotice) => void): Promise<() => void> {
    parseOrThrow(pidSchema, pid, 'pid');
    return this.core.hub.listen(this.core.keys.controlTopic(pid), (event) => {
      if (event.type !== 'message') return;
      const parsed = controlNoticeSchema.safeParse(JSON.parse(event.message));
      if (parsed.success) listener(parsed.data);
    });
  }
}
