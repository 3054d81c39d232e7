import type { LaunchControl } from '@libos/runner';
import { pino } from 'pino';
import { expect, it } from 'vitest';
import { ChildSignals } from '../src/child-signals.js';

/** What the signals asked of a child, in order (the runner's LaunchControl, recorded). */
function recordingControl() {
  const asked: string[] = [];
  const control: LaunchControl = {
    pid: 1,
    paused: false,
    pause: () => asked.push('pause'),
    resume: () => asked.push('resume'),
    cancel: () => asked.push('cancel'),
    signal: (signal) => asked.push(signal) > 0,
  };
  return { control, asked };
}

const renewal = (status: 'running' | 'exited' | 'failed') => ({
  status,
  paused: false,
  pending_signal: null,
  lease_expires_at: new Date().toISOString(),
});

it('a renewal that finds the process ended (its own process_exit) cancels the child once, as the contract does', () => {
  const signals = new ChildSignals(pino({ level: 'silent' }));
  const { control, asked } = recordingControl();
  signals.attach(control);
  signals.renewed(renewal('running'), signals.epoch);
  expect(asked).toEqual([]);
  signals.renewed(renewal('exited'), signals.epoch);
  signals.renewed(renewal('exited'), signals.epoch);
  expect(asked).toEqual(['cancel']);
  // A terminate still escalates past it.
  signals.terminate();
  expect(asked).toEqual(['cancel', 'SIGKILL']);
});
