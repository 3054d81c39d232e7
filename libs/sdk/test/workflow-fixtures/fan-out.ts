import { contractRunner, fanOut, fileJournal, Workflow, type WorkflowEvent } from '../../src/index.js';

export interface FanOutOptions {
  readonly journalPath: string;
  /** Every child appends `<item> <pid>` here when it starts: the launches, counted by the test. */
  readonly launchLog: string;
  readonly items: number;
  readonly maxConcurrent: number;
  /** How long each child works before it completes. */
  readonly childSeconds: number;
  readonly signal?: AbortSignal;
  readonly onEvent?: (event: WorkflowEvent) => void;
}

/** Each child records its launch, works a while, then answers `{answer: <its item>}`. */
const CHILD = String.raw`read request
id=$(printf '%s' "$request" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
item=$(printf '%s' "$request" | sed 's/.*"query":"\([^"]*\)".*/\1/')
echo "$item $$" >> "$LAUNCH_LOG"
sleep "$CHILD_SECONDS"
printf '{"version":1,"request_id":"%s","status":"completed","output":{"answer":"%s"}}' "$id" "$item" > "$1.tmp"
mv "$1.tmp" "$1"
`;

/** A fan-out of `items` agents over real shell children, journaled to a file. */
export async function runFanOut(options: FanOutOptions) {
  const runner = contractRunner({
    launch: () => ({
      command: 'sh',
      args: ['-c', CHILD, 'sh', '{result_file}'],
      extraEnv: { LAUNCH_LOG: options.launchLog, CHILD_SECONDS: String(options.childSeconds) },
    }),
  });
  const wf = new Workflow({
    runner,
    maxConcurrent: options.maxConcurrent,
    journal: await fileJournal(options.journalPath),
    ...(options.onEvent !== undefined && { onEvent: options.onEvent }),
  });
  const items = Array.from({ length: options.items }, (_, i) => `item-${i}`);
  const results = await fanOut(items, (item) => wf.agent({ prompt: item, kind: 'echo' }), {
    ...(options.signal !== undefined && { signal: options.signal }),
  });
  return {
    answers: results.map((r) => (r.ok ? r.value : r.error.message)),
    callsMade: wf.callsMade(),
    callsReplayed: wf.callsReplayed(),
  };
}
