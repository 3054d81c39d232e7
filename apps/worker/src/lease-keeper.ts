import { type Kernel, KernelError } from '@libos/kernel';
import type { RenewResult } from '@libos/protocol';
import { monotonicMs } from '@libos/sandbox';
import type { Logger } from 'pino';

export interface LeaseHooks {
  /** The notice epoch to send with a renewal (see `ChildSignals.epoch`). */
  epoch(): number;
  /** A renewal succeeded; `sentAt` (monotonic ms) is when it was sent, a lower bound of its start. */
  answered(answer: RenewResult, epoch: number, sentAt: number): void;
  /**
   * The kernel says this attempt no longer holds the lease: recovered by the reaper, or just
   * completed by this worker (a renewal can cross the completion).
   */
  lost(error: KernelError): void;
}

/**
 * Renews an attempt's lease every third of its length, one renewal at a time, with the attempt's
 * fence, and hands each answer on. A transient failure is retried at the next tick; the lease
 * outlives two missed renewals. Runs until stopped (after the completion is reported) or lost.
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly kernel: Kernel,
    private readonly attempt: { pid: string; attempt: number; fence: string },
    private readonly leaseMs: number,
    private readonly hooks: LeaseHooks,
    private readonly log: Logger,
  ) {}

  start(): this {
    this.schedule();
    return this;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.renew(), Math.max(1, Math.floor(this.leaseMs / 3)));
  }

  private async renew(): Promise<void> {
    const { pid, attempt, fence } = this.attempt;
    const epoch = this.hooks.epoch();
    const sentAt = monotonicMs();
    try {
      const answer = await this.kernel.worker.renew(pid, attempt, fence, this.leaseMs);
      if (!this.stopped) this.hooks.answered(answer, epoch, sentAt);
    } catch (error) {
      if (
        error instanceof KernelError &&
        (error.code === 'failed_precondition' || error.code === 'not_found')
      ) {
        if (this.stopped) return;
        this.stopped = true;
        this.hooks.lost(error);
        return;
      }
      this.log.warn({ err: messageOf(error) }, 'lease renewal failed; retrying');
    }
    this.schedule();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
