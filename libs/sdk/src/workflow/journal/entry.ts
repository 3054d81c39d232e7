import type { AgentCall, AgentOutcome } from '../types.js';

/** One live, resolved agent call: the unit a journal records and replays. */
export interface JournalEntry {
  readonly call: AgentCall;
  readonly outcome: AgentOutcome;
  /** The workflow phase current when the call was made. */
  readonly phase?: string;
  /** Milliseconds since the epoch around the runner's work. */
  readonly startedAt?: number;
  readonly finishedAt?: number;
}
