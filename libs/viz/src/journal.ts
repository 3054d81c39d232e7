import { readFile } from 'node:fs/promises';
import { z } from 'zod';

// The workflow journal as viz reads it: `{"v":1,"e":<entry>}` lines (reference §2.6). This is a
// read-only, tolerant reader of its own, deliberately not the workflow layer's loader: that one
// repairs torn tails on disk, and a watcher must never rewrite a file a running workflow appends to.

const whole = z.number().int();
/** `null` reads as absent, as in the journal's own decoder. */
const absentIfNull = <T extends z.ZodType>(schema: T) =>
  schema.nullish().transform((value) => value ?? undefined);

export const attemptSchema = z.object({
  attempt_id: z.string(),
  steps_used: whole,
  prompt_tokens: whole,
  completion_tokens: whole,
  cost_usd: absentIfNull(z.number()),
  unaccounted: absentIfNull(z.string()),
});
export type AgentAttempt = z.infer<typeof attemptSchema>;

const FAILURE_NAMES = ['TimedOut', 'NoReport', 'MaxSteps', 'ContextYield', 'Skipped'] as const;
const failureName = z.enum(FAILURE_NAMES);

/** `"TimedOut"` (also tolerated: `["TimedOut"]`) or `["Failed","<reason>"]`. */
export const failureSchema = z.union([
  failureName.transform((name) => ({ name })),
  z.tuple([failureName]).transform(([name]) => ({ name })),
  z.tuple([z.literal('Failed'), z.string()]).transform(([name, reason]) => ({ name, reason })),
]);
export type AgentFailure = z.infer<typeof failureSchema>;

export const outcomeSchema = z.union([
  z
    .tuple([z.literal('Finished'), z.object({ value: z.unknown(), attempt: attemptSchema })])
    .transform(([, { value, attempt }]) => ({ type: 'Finished' as const, value, attempt })),
  z
    .tuple([
      z.literal('DidNotFinish'),
      z.object({ failure: failureSchema, attempt: absentIfNull(attemptSchema) }),
    ])
    .transform(([, { failure, attempt }]) => ({ type: 'DidNotFinish' as const, failure, attempt })),
]);
export type AgentOutcome = z.infer<typeof outcomeSchema>;

export const callSchema = z.object({
  kind: z.string(),
  input: z.unknown(),
  label: z.string(),
  max_steps: absentIfNull(whole),
  scope: z
    .string()
    .nullish()
    .transform((scope) => scope ?? ''),
  schema: z.unknown().optional(),
});

export const entrySchema = z.object({
  call: callSchema,
  outcome: outcomeSchema,
  phase: absentIfNull(z.string()),
  started_at: absentIfNull(whole),
  finished_at: absentIfNull(whole),
});
export type JournalEntry = z.infer<typeof entrySchema>;

const lineSchema = z.object({ v: z.literal(1), e: z.unknown() });

/**
 * Entries in file order. Blank, malformed (including a live writer's torn tail), metadata
 * (`v:1` without `e`) and non-v1 lines are skipped; nothing is ever repaired.
 */
export function parseJournal(text: string): JournalEntry[] {
  const entries: JournalEntry[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      continue;
    }
    const envelope = lineSchema.safeParse(json);
    if (!envelope.success || envelope.data.e === undefined) continue;
    const entry = entrySchema.safeParse(envelope.data.e);
    if (entry.success) entries.push(entry.data);
  }
  return entries;
}

/** The journal at `path`; a missing or unreadable file holds no entries (yet). */
export async function readJournalFile(path: string): Promise<JournalEntry[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return [];
  }
  return parseJournal(text);
}
