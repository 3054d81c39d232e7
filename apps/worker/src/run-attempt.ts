import { type Kernel, KernelError, mintToken } from '@libos/kernel';
import {
  type ClaimedLaunch,
  type Completion,
  completionFromRunResult,
  type LaunchJob,
  outcomeTypeOfTerminal,
  type ProcessStatus,
} from '@libos/protocol';
import { monotonicMs, SANDBOX_ENV, type Spawner } from '@libos/sandbox';
import type { Logger } from 'pino';
import { childEnvironment, hostedHandoff } from './child-env.js';
import { AttemptLog, type ChildLogSettings } from './child-log.js';
import { ChildSignals } from './child-signals.js';
import { confineRequest } from './isolation.js';
import { type LaunchProgress, progressGoal } from './job-report.js';
import { planLaunch } from './launch-plan.js';
import { LeaseKeeper } from './lease-keeper.js';
import { isTransient, reportCompletion, withRetry } from './report.js';

/**
 * What a launch job's processing returns (BullMQ keeps it as the job's return value, which Bull
 * Board shows): after a claim, the board's view of the launch (`LaunchProgress`'s fields).
 */
export interface AttemptSummary {
  pid: string;
  attempt: number;
  claimed: boolean;
  /** The process's goal (cut, as in the progress) and image, once claimed. */
  goal?: string;
  image?: string;
  /** The outcome's type and reason, once the process has one. */
  outcome?: LaunchProgress['outcome'];
  /** Why the claim was refused (`not_runnable`, `superseded`, ...): the job ends quietly. */
  refused?: string;
  /** The contract terminal of the child. */
  terminal?: Completion['terminal']['type'];
  /**
   * The process's status after the completion: from the kernel's answer, or read from the kernel
   * when that answer was lost or a refusal; null when neither could be had.
   */
  status?: ProcessStatus | null;
}

export interface AttemptContext {
  kernel: Kernel;
  workerId: string;
  /** The coordinator URL children get. */
  url: string;
  leaseMs: number;
  log: Logger;
  /** Attempts this worker holds, so shutdown can cancel their children. */
  running: Set<ChildSignals>;
  /** What children inherit (see `inheritedEnvironment`). */
  inheritedEnv: Readonly<Record<string, string>>;
  /**
   * Runs each child (in its sandbox) in a process of its own, and holds the watchdog that kills a
   * child whose lease this worker failed to renew in time (see `fenceMs`).
   */
  spawner: Spawner;
  maxResultBytes: number;
  /** Where launches' result directories are made (`resultParent`); the spawner's TMPDIR when undefined. */
  resultParent: string | undefined;
  /** Children's output goes to the kernel's log store within these bounds, never to our own log. */
  childLog: ChildLogSettings;
  /** The most agent launches a child's `WORKFLOW_HOST` reserves (see `hostedHandoff`). */
  hostedCalls: number;
}

/**
 * How long after a lease renewal was sent the child may run without another: the lease less a
 * margin (a fifth of it, at most 2 s) for the watchdog's wake-up and the kill itself. The kernel
 * extends the lease from when the renewal runs, which is after it was sent, so the child is dead
 * before the lease can expire and before the reaper can hand the process to another attempt.
 */
export function fenceMs(leaseMs: number): number {
  return leaseMs - Math.min(leaseMs / 5, 2_000);
}

/**
 * One launch job: subscribe to the process's control channel, claim the attempt (the kernel
 * refuses a second claim, a superseded attempt, a killed or paused-while-queued process), then
 * run the child under the contract while the lease is renewed and signals are delivered, and
 * report the ending with the attempt's fence. A child's failure is kernel state, never a thrown
 * error.
 */
export async function runAttempt(
  job: LaunchJob,
  ctx: AttemptContext,
  progress: (update: LaunchProgress) => void = () => {},
): Promise<AttemptSummary> {
  const { pid, attempt } = job;
  const log = ctx.log.child({ pid, attempt });
  const retry = { withinMs: 3 * ctx.leaseMs, log };
  const signals = new ChildSignals(log);
  // Subscribed before the claim, so a signal between the claim and the spawn is not missed.
  const release = await withRetry(
    () =>
      ctx.kernel.worker.watchControl(pid, (notice) => {
        if (notice.attempt === attempt) signals.notice(notice);
      }),
    { ...retry, what: 'control subscription' },
  );
  try {
    // The token's plaintext goes to the child's environment only; the kernel keeps its hash.
    const minted = mintToken(pid);
    let claimed: ClaimedLaunch;
    let claimSentAt = monotonicMs();
    try {
      claimed = await withRetry(
        () => {
          claimSentAt = monotonicMs();
          return ctx.kernel.worker.claim(pid, attempt, {
            workerId: ctx.workerId,
            tokenHash: minted.tokenHash,
            leaseMs: ctx.leaseMs,
          });
        },
        { ...retry, what: 'claim' },
      );
    } catch (error) {
      if (error instanceof KernelError && !isTransient(error)) {
        log.info({ reason: error.reason ?? error.code, err: error.message }, 'claim refused: nothing to run');
        return { pid, attempt, claimed: false, refused: error.reason ?? error.code };
      }
      throw error;
    }
    // Per-launch lines are debug: at info they cost a measurable share of a trivial child's CPU.
    log.debug({ image: claimed.image }, 'attempt claimed');
    const shown = { pid, attempt, goal: progressGoal(claimed.goal), image: claimed.image };
    progress({ ...shown, status: 'running' });
    ctx.running.add(signals);
    const ids = { pid, attempt, fence: claimed.fence };
    const fence = { id: claimed.attempt_id, claimSentAt, ms: fenceMs(ctx.leaseMs) };
    let reporting = false;
    const lease = new LeaseKeeper(
      ctx.kernel,
      ids,
      ctx.leaseMs,
      {
        epoch: () => signals.epoch,
        answered: (answer, epoch, sentAt) => {
          ctx.spawner.beat(fence.id, sentAt + fence.ms);
          signals.renewed(answer, epoch);
        },
        lost: (error) => {
          if (reporting) return; // the renewal crossed this worker's own completion
          // The reaper recovered the attempt, so another may run: this child must not go on.
          log.warn(
            { code: error.code, reason: error.reason, err: error.message },
            'lease lost: killing the child',
          );
          signals.terminate();
        },
      },
      log,
    ).start();
    try {
      const completion = await runChild(claimed, minted.token, signals, ctx, log, fence);
      reporting = true;
      const done = await reportCompletion(ctx.kernel, ids, completion, { leaseMs: ctx.leaseMs, log });
      let ended: Pick<LaunchProgress, 'status' | 'outcome'> | undefined;
      if (done) {
        // a kill's reason is the signal's, which the kernel holds: the failed job's reason says it
        const reason = done.status === 'killed' ? undefined : completion.terminal.reason;
        const type = done.status === 'killed' ? 'killed' : outcomeTypeOfTerminal(completion.terminal.type);
        ended = { status: done.status, outcome: { type, ...(reason ? { reason } : {}) } };
      } else {
        // The kernel took the completion but its answer was lost, or it refused it (the attempt
        // was superseded): the board shows the process as the kernel holds it, so a failed
        // process is still a failed job and a card never stays `running`.
        ended = await processEnding(ctx.kernel, pid);
      }
      if (ended) progress({ ...shown, ...ended });
      return {
        ...shown,
        claimed: true,
        terminal: completion.terminal.type,
        status: ended?.status ?? null,
        ...(ended?.outcome ? { outcome: ended.outcome } : {}),
      };
    } finally {
      lease.stop();
      ctx.running.delete(signals);
    }
  } finally {
    release();
  }
}

/** The process's status and outcome as the kernel holds them; undefined when it cannot be read. */
async function processEnding(
  kernel: Kernel,
  pid: string,
): Promise<Pick<LaunchProgress, 'status' | 'outcome'> | undefined> {
  const view = await kernel.admin.getProcess(pid).catch(() => undefined);
  if (!view) return undefined;
  const { outcome } = view;
  return {
    status: view.status,
    ...(outcome
      ? { outcome: { type: outcome.type, ...(outcome.reason ? { reason: outcome.reason } : {}) } }
      : {}),
  };
}

/** Runs the claimed attempt's child and turns its ending into a completion; never throws. */
async function runChild(
  claimed: ClaimedLaunch,
  token: string,
  signals: ChildSignals,
  ctx: AttemptContext,
  log: Logger,
  fence: { id: string; claimSentAt: number; ms: number },
): Promise<Completion> {
  const plan = planLaunch(claimed);
  if (plan.kind === 'exhausted') {
    log.info({ terminal: plan.completion.terminal }, 'budget spent: nothing launched');
    return plan.completion;
  }
  const started = performance.now();
  const wallMs = () => Math.max(0, performance.now() - started - signals.pausedMs);
  const confined = ctx.spawner.report.level !== 'none';
  let lostLines = false;
  const output = new AttemptLog(
    (batch) => ctx.kernel.logs.append(claimed.pid, claimed.attempt, batch, ctx.childLog.maxBytes),
    ctx.childLog,
    (error) => {
      if (lostLines) return; // once per attempt: a Redis outage must not flood our own log
      lostLines = true;
      log.warn({ err: error instanceof Error ? error.message : String(error) }, 'child output lost');
    },
  );
  try {
    const result = await ctx.spawner.run({
      ...plan.launch,
      env: childEnvironment(
        ctx.inheritedEnv,
        confined ? { ...SANDBOX_ENV, ...claimed.image_spec.env } : claimed.image_spec.env,
        { url: ctx.url, pid: claimed.pid, token },
        hostedHandoff(claimed, plan.launch.deadlineMs, ctx.hostedCalls),
      ),
      maxResultBytes: ctx.maxResultBytes,
      ...(ctx.resultParent === undefined ? {} : { resultParent: ctx.resultParent }),
      confine: confined ? confineRequest(claimed) : undefined,
      // Armed before the spawn: from here on the child dies unless the lease keeps being renewed.
      fence: { id: fence.id, deadline: fence.claimSentAt + fence.ms },
      stdout: output.stdout,
      stderr: output.stderr,
      onSpawn: (control) => {
        log.debug({ os_pid: control.pid, deadline_ms: plan.launch.deadlineMs }, 'child spawned');
        signals.attach(control);
      },
      // The runner's fields (its `pid` is the OS pid) are nested so they cannot shadow ours.
      ...(log.isLevelEnabled('debug')
        ? { logger: { debug: (fields: object, message: string) => log.debug({ runner: fields }, message) } }
        : {}),
    });
    signals.detach();
    return completionFromRunResult(result, wallMs());
  } catch (error) {
    signals.detach();
    const message = error instanceof Error ? error.message : String(error);
    log.error({ err: message }, 'the child could not be run');
    return {
      terminal: { type: 'failed', reason: `the worker could not run the child: ${message}` },
      usage: { prompt_tokens: 0, completion_tokens: 0, steps: 0, wall_ms: Math.round(wallMs()) },
    };
  } finally {
    // The log's last batch lands before the completion is reported, so a follower that sees the
    // process terminal has every line.
    await output.end();
  }
}
