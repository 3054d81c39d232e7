import type {
  AgentAttempt,
  AgentCall,
  AgentOutcome,
  ReplayDecision,
  Runner,
  WorkflowEvent,
} from '../src/index.js';

export function attemptOf(
  id: string,
  prompt = 0,
  completion = 0,
  extra: Partial<AgentAttempt> = {},
): AgentAttempt {
  return { attemptId: id, stepsUsed: 1, promptTokens: prompt, completionTokens: completion, ...extra };
}

/** A Runner whose every live call is answered by `answer`; it records the calls it ran. */
export class ScriptedRunner implements Runner {
  readonly calls: AgentCall[] = [];
  validateReplay?: (call: AgentCall, outcome: AgentOutcome) => ReplayDecision | Promise<ReplayDecision>;

  constructor(
    readonly answer: (call: AgentCall, signal: AbortSignal | undefined, n: number) => Promise<AgentOutcome>,
  ) {}

  run(call: AgentCall, signal?: AbortSignal): Promise<AgentOutcome> {
    this.calls.push(call);
    return this.answer(call, signal, this.calls.length);
  }
}

/** Answers every call with `{echo: input}` and 10 + 5 tokens. */
export function echoRunner(): ScriptedRunner {
  return new ScriptedRunner(async (call, _signal, n) => ({
    type: 'Finished',
    value: { echo: call.input },
    attempt: attemptOf(`s-${n}`, 10, 5),
  }));
}

/** A promise with its resolver outside, for ordering concurrent steps deterministically. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Resolves when `signal` aborts, rejecting with its reason: a runner that honours cancellation. */
export function untilAborted(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_, reject) => {
    if (signal === undefined) return;
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/** An event in one short line, for comparing event sequences. */
export function describeEvent(e: WorkflowEvent): string {
  switch (e.type) {
    case 'PhaseStarted':
      return `phase ${e.title}`;
    case 'Log':
      return `log ${e.message}`;
    case 'AgentStarted':
      return `started ${e.label}${e.phase === undefined ? '' : ` @${e.phase}`}`;
    case 'AgentFinished':
      return `finished ${e.label} ${e.disposition}`;
    case 'AgentReplayed':
      return `replayed ${e.label} ${e.disposition}`;
  }
}

export function eventLog(): {
  events: WorkflowEvent[];
  onEvent: (e: WorkflowEvent) => void;
  text(): string[];
} {
  const events: WorkflowEvent[] = [];
  return { events, onEvent: (e) => events.push(e), text: () => events.map(describeEvent) };
}

/** The start of every shell child: read the request line and pull out its request id. */
const READ_REQUEST = String.raw`read request
id=$(printf '%s' "$request" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
`;

const USAGE_7_3 =
  '"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":7}';

/** `sh -c '<script>' sh {result_file}`: the result path arrives as `$1`, the request id as `$id`. */
export function shChild(body: string): { command: string; args: string[] } {
  return { command: 'sh', args: ['-c', READ_REQUEST + body, 'sh', '{result_file}'] };
}

/** A shell line writing `{"version":1,"request_id":$id,<fields>}` atomically to the result file. */
export function writeResult(fields: string): string {
  const doc = `{"version":1,"request_id":"%s",${fields.replaceAll('%', '%%')}}`;
  return `printf '${doc}' "$id" > "$1.tmp" && mv "$1.tmp" "$1"\n`;
}

export const COMPLETED_READY = writeResult(
  `"status":"completed","output":{"answer":"ready"},${USAGE_7_3},"steps":1`,
);

/** Completes with the request line it received as its report. */
export const ECHO_REQUEST = `printf '{"version":1,"request_id":"%s","status":"completed","output":%s}' "$id" "$request" > "$1"
`;
