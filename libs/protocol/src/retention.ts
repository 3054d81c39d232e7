import { z } from 'zod';
import { pidSchema } from './common.js';

/** `POST /v1/admin/gc`: what one retention sweep did. */
export const gcReportSchema = z.object({
  /** Processes deleted. */
  deleted: z.number().int(),
  /** Trees visited. */
  trees: z.number().int(),
  /** Retention shards this sweep held (the others were another coordinator's, or had nothing due). */
  shards: z.number().int(),
});
export type GcReport = z.infer<typeof gcReportSchema>;

/** `DELETE /v1/admin/processes/{pid}`: a terminal process and its subtree, deleted. */
export const deleteProcessResultSchema = z.object({ pid: pidSchema, deleted: z.number().int() });
export type DeleteProcessResult = z.infer<typeof deleteProcessResultSchema>;
