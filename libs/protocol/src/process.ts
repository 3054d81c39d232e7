import { z } from 'zod';
import { budgetViewSchema } from './budget.js';
import { capabilityGrantSchema, capabilityRequirementSchema } from './capability.js';
import { jsonValueSchema, oidSchema, pidSchema, timestampSchema } from './common.js';
import { messageFilterSchema } from './messages.js';

export const PROCESS_STATUSES = [
  'runnable',
  'running',
  'waiting_event',
  'paused',
  'exited',
  'failed',
  'killed',
] as const;
export const processStatusSchema = z.enum(PROCESS_STATUSES);
export type ProcessStatus = z.infer<typeof processStatusSchema>;
export const TERMINAL_STATUSES: readonly ProcessStatus[] = ['exited', 'failed', 'killed'];
export function isTerminal(status: ProcessStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

export const SIGNALS = ['pause', 'resume', 'cancel', 'terminate'] as const;
export const signalSchema = z.enum(SIGNALS);
export type Signal = z.infer<typeof signalSchema>;

export const OUTCOME_TYPES = [
  'completed',
  'no_report',
  'max_steps_exhausted',
  'context_yield',
  'timed_out',
  'failed',
  'killed',
] as const;
export const outcomeTypeSchema = z.enum(OUTCOME_TYPES);
export type OutcomeType = z.infer<typeof outcomeTypeSchema>;

/** What an attempt consumed, as charged to the budget. */
export const usageSchema = z.object({
  prompt_tokens: z.number().int().min(0),
  completion_tokens: z.number().int().min(0),
  cost_usd: z.number().min(0).optional(),
  steps: z.number().int().min(0),
  wall_ms: z.number().int().min(0),
});
export type Usage = z.infer<typeof usageSchema>;

/** The typed ending of a process. `attempt_id` is `<pid>:<attempt>`. */
export const outcomeSchema = z.object({
  type: outcomeTypeSchema,
  reason: z.string().optional(),
  attempt_id: z.string(),
  exit_code: z.number().int().optional(),
  usage: usageSchema.optional(),
  steps: z.number().int().min(0).optional(),
  unaccounted: z.string().optional(),
});
export type Outcome = z.infer<typeof outcomeSchema>;

/** Why a process is `waiting_event`: the child, the set of children or the mailbox filter it blocks on. */
export const waitStateSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('child'), child_pid: pidSchema, since: timestampSchema }),
  /** `wait_children`: any one of the set (mode `any`) or every one (`all`) to end. */
  z.object({
    type: z.literal('children'),
    child_pids: z.array(pidSchema),
    mode: z.enum(['any', 'all']),
    since: timestampSchema,
  }),
  z.object({
    type: z.literal('message'),
    filter: messageFilterSchema.extend({ include_acked: z.boolean() }),
    since: timestampSchema,
  }),
]);
export type WaitState = z.infer<typeof waitStateSchema>;

export const pendingSignalSchema = z.object({
  signal: z.enum(['cancel', 'terminate']),
  reason: z.string().optional(),
});

export const FORK_MODES = ['worker', 'restricted', 'copy', 'speculative'] as const;
export const forkModeSchema = z.enum(FORK_MODES);
export type ForkMode = z.infer<typeof forkModeSchema>;
export const LAUNCH_MODES = ['root', 'spawn', ...FORK_MODES] as const;

export const inheritedPathSchema = z.object({
  path: z.string(),
  kind: z.enum(['file', 'dir']),
  access: z.enum(['read', 'write']),
});
export type InheritedPath = z.infer<typeof inheritedPathSchema>;

/** A process as tools and admin calls show it. */
export const processViewSchema = z.object({
  pid: pidSchema,
  parent_pid: pidSchema.nullable(),
  root_pid: pidSchema,
  /** The process's own object namespace (its handles and owned objects): fresh at every launch. */
  namespace: z.string(),
  goal: z.string(),
  input: jsonValueSchema.nullable(),
  image: z.string().nullable(),
  cwd: z.string(),
  status: processStatusSchema,
  wait_state: waitStateSchema.nullable(),
  outcome: outcomeSchema.nullable(),
  result_oid: oidSchema.nullable(),
  state_generation: z.number().int(),
  attempt: z.number().int(),
  resource_budget: budgetViewSchema,
  created_at: timestampSchema,
  updated_at: timestampSchema,
  /** When its current attempt was claimed (caller-driven: when it was created); null before. */
  started_at: timestampSchema.nullable(),
  /** When it reached its terminal status; null while it lives. */
  ended_at: timestampSchema.nullable(),
  /** Who drives it: a worker (launched) or its caller through the tools API. */
  driver: z.enum(['worker', 'caller']),
  mode: z.enum(LAUNCH_MODES),
  pending_signal: pendingSignalSchema.nullable(),
  pause_reason: z.string().nullable(),
  /** `host`: only an operator (admin signal) may resume, e.g. after `stale_execution`. */
  resume_gate: z.literal('host').nullable(),
  capabilities: z.array(capabilityGrantSchema),
  required_capabilities: z.array(capabilityRequirementSchema),
  clearance: z.array(z.string()),
  labels: z.array(z.string()),
  skill_snapshot: z.array(z.string()),
  roots: z.array(oidSchema),
  inherited_paths: z.array(inheritedPathSchema),
  merged: z.boolean(),
});
export type ProcessView = z.infer<typeof processViewSchema>;
