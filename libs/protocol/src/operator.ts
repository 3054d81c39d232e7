import { z } from 'zod';
import { jsonValueSchema, oidSchema, pidSchema } from './common.js';
import { outcomeSchema, processStatusSchema } from './process.js';

/** `POST /v1/admin/processes/{pid}/wait`: an operator's wait on any process (e.g. a launched root). */
export const adminWaitArgsSchema = z.strictObject({ block: z.boolean().default(true) });
export const adminWaitResultSchema = z.object({
  ready: z.boolean(),
  pid: pidSchema,
  status: processStatusSchema,
  outcome: outcomeSchema.nullable(),
  result_oid: oidSchema.nullable(),
  state_generation: z.number().int(),
});
export type AdminWaitResult = z.infer<typeof adminWaitResultSchema>;

/** `GET /v1/admin/objects/{oid}`: an operator reads any object, e.g. a root's result. */
export const adminObjectSchema = z.object({
  oid: oidSchema,
  payload: jsonValueSchema,
  owner: pidSchema,
  labels: z.array(z.string()),
  version: z.number().int(),
});
export type AdminObject = z.infer<typeof adminObjectSchema>;
