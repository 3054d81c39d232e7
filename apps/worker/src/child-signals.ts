import { type ControlNotice, isTerminal, type RenewResult } from '@libos/protocol';
import type { LaunchControl } from '@libos/runner';
import type { Logger } from 'pino';

type Stop = 'cancel' | 'terminate';

/**
 * Delivers the process's lifecycle signals to its running child. What the kernel wants is kept
 * as a desired state (paused or not, a pending cancel/terminate) that two feeds update: control
 * notices, acted on at once (edge), and every lease renewal's answer, reconciled (level), so a
 * notice lost in a reconnect is still honoured within a renewal period. Wants that arrive before
 * the child is spawned are applied as soon as it is. Paused time is measured here, since the
 * child's wall time excludes it.
 */
export class ChildSignals {
  private control: LaunchControl | undefined;
  private wantPaused = false;
  private stop: Stop | undefined;
  private delivered: Stop | undefined;
  private pausedSince: number | undefined;
  private pausedTotal = 0;
  /** Counts notices, so a renewal answer older than a notice cannot undo it (they race). */
  private notices = 0;

  constructor(private readonly log: Logger) {}

  /** A token to pass back with a renewal's answer: the notices seen when it was sent. */
  get epoch(): number {
    return this.notices;
  }

  /** Milliseconds the child has spent stopped so far. */
  get pausedMs(): number {
    return this.pausedTotal + (this.pausedSince === undefined ? 0 : performance.now() - this.pausedSince);
  }

  /** The child is spawned: apply what is wanted now. */
  attach(control: LaunchControl): void {
    this.control = control;
    this.apply();
  }

  /** The run is over; later signals have nothing to act on. */
  detach(): void {
    this.endPause();
    this.control = undefined;
  }

  notice(notice: ControlNotice): void {
    this.notices += 1;
    this.log.info({ signal: notice.signal, reason: notice.reason }, 'signal notice');
    if (notice.signal === 'pause') this.wantPaused = true;
    else if (notice.signal === 'resume') this.wantPaused = false;
    else this.escalate(notice.signal);
    this.apply();
  }

  renewed(answer: RenewResult, epoch: number): void {
    if (answer.pending_signal) this.escalate(answer.pending_signal.signal);
    // Ended by its own process_exit: the kernel's cancel notice may have been lost in a reconnect.
    if (isTerminal(answer.status)) this.escalate('cancel');
    // Pause and resume only when no notice arrived while the renewal was in flight.
    if (epoch === this.notices && answer.paused !== this.wantPaused) {
      this.log.info({ paused: answer.paused }, 'renewal reconciles pause state');
      this.wantPaused = answer.paused;
    }
    this.apply();
  }

  /** The graceful path of the contract: stdin EOF, the grace window, then the group is killed. */
  cancel(): void {
    this.escalate('cancel');
    this.apply();
  }

  /** Kill the whole group at once (a terminate, or a lease that is no longer ours). */
  terminate(): void {
    this.escalate('terminate');
    this.apply();
  }

  private escalate(stop: Stop): void {
    if (this.stop !== 'terminate') this.stop = stop;
  }

  private apply(): void {
    const control = this.control;
    if (!control) return;
    if (this.stop === 'terminate') {
      if (this.delivered === 'terminate') return;
      this.delivered = 'terminate';
      control.signal('SIGKILL');
      // A stopped group dies of SIGKILL too; resuming restarts the runner's clock for teardown.
      this.resume(control);
      return;
    }
    if (this.stop === 'cancel') {
      if (this.delivered) return;
      this.delivered = 'cancel';
      // A stopped child cannot wind down, and the grace clock is frozen while it is stopped.
      this.resume(control);
      control.cancel();
      return;
    }
    if (this.wantPaused && !control.paused) {
      control.pause();
      this.pausedSince = performance.now();
      this.log.info('child paused (SIGSTOP of its group)');
    } else if (!this.wantPaused && control.paused) {
      this.resume(control);
      this.log.info('child resumed (SIGCONT of its group)');
    }
  }

  private resume(control: LaunchControl): void {
    if (!control.paused) return;
    control.resume();
    this.endPause();
  }

  private endPause(): void {
    if (this.pausedSince === undefined) return;
    this.pausedTotal += performance.now() - this.pausedSince;
    this.pausedSince = undefined;
  }
}
