import { fanOut, type Json, quorum, retry, type Workflow } from '@libos/sdk';
import { z } from 'zod';

/** The kind (and, on a cluster, the image) of the example's agent: `answer-child.ts`. */
export const ANSWER_KIND = 'answer';

/** Four questions; the last one's agent declines (`no_report`), so the quorum of three decides. */
export const QUESTIONS = [
  { query: 'what does the coordinator record' },
  { query: 'who runs a launched child' },
  { query: 'what wakes a blocking wait' },
  { query: 'what is left unsaid', decline: true },
] as const;

const reportSchema = z.object({ answer: z.string(), words: z.number().int() });
export type AnswerReport = z.infer<typeof reportSchema>;

// A type, not an interface: it must be assignable to JSON (it becomes the root's result).
export type AnswersResult = {
  answers: AnswerReport[];
  /** Why the calls that missed the quorum failed (the workflow's error texts). */
  missed: string[];
  summary: AnswerReport;
  /** How many launches the summary took: its first is asked to fail, so the retry shows. */
  summary_attempts: number;
};

/**
 * Fan out one agent per question, accept a quorum of three, then summarise the answers under a
 * retry. It knows nothing of where agents run: the Workflow's runner decides (local or cluster).
 */
export async function answersWorkflow(
  wf: Workflow,
  options: { workMs?: number; signal?: AbortSignal } = {},
): Promise<AnswersResult> {
  const { workMs = 0, signal } = options;
  wf.phase('ask');
  const asked = await fanOut(
    QUESTIONS,
    (question) =>
      wf.agentCall({
        kind: ANSWER_KIND,
        input: { ...question, work_ms: workMs },
        label: `ask: ${question.query}`,
      }),
    { ...(signal && { signal }) },
  );
  const answers = quorum(asked, 3).map(decode);
  const missed = asked.flatMap((result) => (result.ok ? [] : [result.error.message]));

  wf.phase('summarise');
  let summaryAttempts = 0;
  const summary = await retry(
    (attempt) => {
      summaryAttempts = attempt;
      return wf.agentCall({
        kind: ANSWER_KIND,
        input: {
          query: `summarise: ${answers.map((a) => a.answer).join('; ')}`,
          work_ms: workMs,
          ...(attempt === 1 && { fail: true }),
        },
        label: `summarise (attempt ${attempt})`,
        ...(signal && { signal }),
      });
    },
    { maxRetry: 2, ...(signal && { signal }) },
  );
  return { answers, missed, summary: decode(summary), summary_attempts: summaryAttempts };
}

/** The child's report; anything else is a bug in the example, not an agent's failure. */
function decode(report: Json): AnswerReport {
  return reportSchema.parse(report);
}
