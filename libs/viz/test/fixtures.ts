// Journal lines in the workflow layer's encoding (reference §2.6), built for the tests.

export function attempt(id: string, steps: number, prompt: number, completion: number, extra: object = {}) {
  return {
    attempt_id: id,
    steps_used: steps,
    prompt_tokens: prompt,
    completion_tokens: completion,
    ...extra,
  };
}

export function finished(
  label: string,
  input: unknown,
  value: unknown,
  att = attempt(`cr-${label}`, 1, 10, 5),
) {
  return {
    call: { kind: 'explore', input, label, scope: '' },
    outcome: ['Finished', { value, attempt: att }],
  };
}

export function didNotFinish(label: string, input: unknown, failure: unknown, att?: object) {
  const fields = att === undefined ? { failure } : { failure, attempt: att };
  return { call: { kind: 'explore', input, label, scope: '' }, outcome: ['DidNotFinish', fields] };
}

export function line(entry: object): string {
  return JSON.stringify({ v: 1, e: entry });
}

/** An answer long enough (> 60 code units) to be traced into a later input. */
export const LONG_ANSWER =
  'The scheduler keeps one queue per pool; workers pull launches and report completions back.';

export const SPECIAL_ANSWER = '<script>window.pwned = 1</script><b>bold</b> & "quoted" \'single\'';

/** Four entries: a traced pair (1 → 3), a failure, and an answer full of HTML specials. */
export function sampleJournal(): string {
  return [
    line({
      ...finished(
        'scout the queue',
        { query: 'how are launches queued?' },
        { answer: LONG_ANSWER, engine: 'claude' },
        attempt('cr-1', 3, 1200, 300),
      ),
      phase: 'explore',
      started_at: 1_700_000_000_000,
      finished_at: 1_700_000_004_250,
    }),
    line({
      ...didNotFinish(
        'probe limits',
        { query: 'limits?' },
        ['Failed', 'claude: error_during_execution: boom'],
        attempt('cr-2', 1, 400, 20),
      ),
      phase: 'explore',
    }),
    line({
      ...finished(
        'summarise',
        { query: 'summarise this', hints: `earlier: ${LONG_ANSWER}` },
        { answer: 'one queue per pool' },
        attempt('cr-3', 2, 2000, 500),
      ),
      phase: 'write',
    }),
    line(finished('render <html>', 'show specials', { answer: SPECIAL_ANSWER }, attempt('cr-4', 1, 50, 5))),
  ].join('\n');
}
