import { jsonValueSchema, oidSchema, outcomeSchema, pidSchema, processStatusSchema } from '@libos/protocol';
import { z } from 'zod';

// TODO(lead): move to @libos/protocol once the coordinator serves these routes.
export const adminWaitResultSchema = z.object({
  ready: z.boolean(),
  pid: pidSchema,
  status: processStatusSchema,
  outcome: outcomeSchema.nullable(),
  result_oid: oidSchema.nullable(),
  state_generation: z.number().int(),
});
export const adminObjectSchema = z.object({
  oid: oidSchema,
  payload: jsonValueSchema,
  owner: pidSchema,
  labels: z.array(z.string()),
  version: z.number().int(),
});
