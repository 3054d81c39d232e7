import { jsonEqual } from '../json.js';
import type { AgentCall } from '../types.js';
import type { JournalEntry } from './entry.js';

/** A claimed replay candidate. `release` makes it available again (a validator raised). */
export interface JournalClaim {
  readonly entry: JournalEntry;
  release(): void;
}

/**
 * Where a workflow records live outcomes and finds the outcomes of earlier generations.
 * Replay reads only `prior` entries (what was there when the journal was opened), never what
 * this generation appended, so two identical calls in one run both execute.
 */
export interface Journal {
  /**
   * Claim the next replay candidate for this call's work, synchronously, so concurrent identical
   * calls each get a distinct entry: the first unconsumed matching `Finished`, else the earliest
   * unconsumed matching `Skipped` refusal. Other failures are never candidates.
   */
  claim(call: AgentCall): JournalClaim | undefined;
  /** Record one live outcome durably (entries are whole; appends never interleave). */
  append(entry: JournalEntry): Promise<void>;
  /** The entries of earlier generations (a copy). */
  prior(): JournalEntry[];
  /** The entries this generation appended (a copy). */
  recorded(): JournalEntry[];
}

/** Work identity: everything but the label (and never phase, timestamps or attempt id). */
export function sameWork(a: AgentCall, b: AgentCall): boolean {
  return (
    a.kind === b.kind &&
    a.maxSteps === b.maxSteps &&
    a.scope === b.scope &&
    jsonEqual(a.input, b.input) &&
    jsonEqual(a.schema, b.schema)
  );
}

/** Claim bookkeeping over prior entries, shared by every journal; subclasses only store. */
export abstract class ReplayJournal implements Journal {
  readonly #prior: readonly JournalEntry[];
  readonly #consumed: boolean[];
  readonly #recorded: JournalEntry[] = [];

  protected constructor(prior: readonly JournalEntry[]) {
    this.#prior = [...prior];
    this.#consumed = this.#prior.map(() => false);
  }

  claim(call: AgentCall): JournalClaim | undefined {
    let skipped: number | undefined;
    for (const [i, entry] of this.#prior.entries()) {
      if (this.#consumed[i] || !sameWork(entry.call, call)) continue;
      if (entry.outcome.type === 'Finished') return this.#take(i, entry);
      if (skipped === undefined && entry.outcome.failure.type === 'Skipped') skipped = i;
    }
    if (skipped === undefined) return undefined;
    return this.#take(skipped, this.#prior[skipped] as JournalEntry);
  }

  #take(index: number, entry: JournalEntry): JournalClaim {
    this.#consumed[index] = true;
    const release = () => {
      this.#consumed[index] = false;
    };
    return { entry, release };
  }

  async append(entry: JournalEntry): Promise<void> {
    await this.store(entry);
    this.#recorded.push(entry);
  }

  protected abstract store(entry: JournalEntry): Promise<void>;

  prior(): JournalEntry[] {
    return [...this.#prior];
  }

  recorded(): JournalEntry[] {
    return [...this.#recorded];
  }
}

class MemoryJournal extends ReplayJournal {
  constructor(prior: readonly JournalEntry[]) {
    super(prior);
  }

  protected async store(): Promise<void> {}
}

/** A journal in memory: `prior` is copied; appends are kept only in `recorded()`. */
export function memoryJournal(prior: readonly JournalEntry[] = []): Journal {
  return new MemoryJournal(prior);
}
