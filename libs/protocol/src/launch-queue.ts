import { z } from 'zod';

/**
 * The launch queues' shared names: the coordinator enqueues, workers consume. The hash-tagged
 * prefix keeps each queue's keys in one Redis Cluster slot, as BullMQ requires.
 */
export const QUEUE_PREFIX = '{libos}';

export function launchQueueName(pool: string): string {
  return `launch-${pool}`;
}

/** BullMQ refuses `:` in custom ids, so the attempt is joined with `-a`. */
export function launchJobId(pid: string, attempt: number): string {
  return `${pid}-a${attempt}`;
}

/** A job carries only what names the launch: no token, no goal, no input. */
export const launchJobSchema = z.strictObject({ pid: z.string(), attempt: z.number().int().min(1) });
export type LaunchJob = z.infer<typeof launchJobSchema>;
