import type { AgentFailure, AgentOutcome, JournalEntry } from './journal.js';

// What the page shows that the journal does not store: display texts, token totals, and the
// derived dataflow. Dynamic workflows declare no graph, so content recovers one.

const FAILURE_TEXTS: Record<Exclude<AgentFailure['name'], 'Failed'>, string> = {
  TimedOut: 'timed out',
  NoReport: 'finished without a report',
  MaxSteps: 'exhausted its step ceiling',
  ContextYield: 'yielded at the context ceiling',
  Skipped: 'was skipped by the user',
};

/** The workflow layer's display text for a failure (`failed: <reason>` for `Failed`). */
export function failureText(failure: AgentFailure): string {
  return failure.name === 'Failed' ? `failed: ${failure.reason ?? ''}` : FAILURE_TEXTS[failure.name];
}

/** A report's answer text: its `answer` string when it has one, else the whole report as JSON. */
export function answerText(value: unknown): string {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const answer: unknown = (value as Record<string, unknown>).answer;
    if (typeof answer === 'string') return answer;
  }
  return JSON.stringify(value) ?? 'null';
}

/** What an output panel shows: the answer, or the failure. */
export function outcomeText(outcome: AgentOutcome): string {
  return outcome.type === 'Finished' ? answerText(outcome.value) : failureText(outcome.failure);
}

export function tokensOf(outcome: AgentOutcome): number {
  const attempt = outcome.attempt;
  return attempt === undefined ? 0 : attempt.prompt_tokens + attempt.completion_tokens;
}

export function stepsOf(outcome: AgentOutcome): number {
  return outcome.attempt?.steps_used ?? 0;
}

/** finished_at − started_at, when both are known. */
export function elapsedMs(entry: JournalEntry): number | undefined {
  return entry.started_at === undefined || entry.finished_at === undefined
    ? undefined
    : entry.finished_at - entry.started_at;
}

export interface Edge {
  from: number;
  to: number;
}

const MIN_ANSWER_UNITS = 60;
const PROBE_CHARACTERS = 50;

/**
 * Derived dataflow: an edge i → j (i < j) when successful entry i's answer text is longer than
 * 60 UTF-16 code units and its first 50 characters, JSON-escaped, occur in entry j's stringified
 * input. A content heuristic, not a declared dependency.
 */
export function deriveEdges(entries: readonly JournalEntry[]): Edge[] {
  const probes = entries.map((entry) => {
    if (entry.outcome.type !== 'Finished') return undefined;
    const answer = answerText(entry.outcome.value);
    if (answer.length <= MIN_ANSWER_UNITS) return undefined;
    const head = Array.from(answer).slice(0, PROBE_CHARACTERS).join('');
    // Escaped the way the text appears inside a stringified input.
    return JSON.stringify(head).slice(1, -1);
  });
  const edges: Edge[] = [];
  entries.forEach((entry, to) => {
    const input = JSON.stringify(entry.call.input) ?? '';
    for (let from = 0; from < to; from++) {
      const probe = probes[from];
      if (probe !== undefined && input.includes(probe)) edges.push({ from, to });
    }
  });
  return edges;
}
