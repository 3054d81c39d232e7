import { z } from 'zod';

/**
 * A worker sends a launched child `{goal, pid, parent_pid, input, ...}` (docs/api.md), with
 * the spawn's input as `input`, while `contractRunner` sends the agent call's input as it is. A
 * child meant for both runners reads the call's input through this.
 */
const clusterEnvelopeSchema = z.object({
  goal: z.string(),
  pid: z.string(),
  parent_pid: z.string().nullable(),
  input: z.json().nullable(),
});

export function callInput(requestInput: unknown): unknown {
  const envelope = clusterEnvelopeSchema.safeParse(requestInput);
  return envelope.success ? envelope.data.input : requestInput;
}
