import { z } from 'zod';
import { imageSpecSchema } from './admin.js';
import { budgetViewSchema } from './budget.js';
import { capabilityGrantSchema } from './capability.js';
import { jsonValueSchema, pidSchema, timestampSchema } from './common.js';
import {
  inheritedPathSchema,
  type OutcomeType,
  pendingSignalSchema,
  processStatusSchema,
  signalSchema,
} from './process.js';

/** What the coordinator enqueues: one BullMQ job with id `launchJobId(pid, attempt)` on queue `pool`. */
export const launchSchema = z.object({
  pid: pidSchema,
  root_pid: pidSchema,
  attempt: z.number().int().min(1),
  job_id: z.string(),
  pool: z.string(),
});
export type Launch = z.infer<typeof launchSchema>;

export const claimArgsSchema = z.strictObject({
  worker_id: z.string().min(1).max(200),
  /** sha256 (hex) of the token secret the worker minted; the plaintext never reaches Redis. */
  token_hash: z.string().regex(/^[0-9a-f]{64}$/),
  lease_ms: z.number().int().min(50).max(3_600_000),
});
export type ClaimArgs = z.infer<typeof claimArgsSchema>;

/** Everything a worker needs to run an attempt. */
export const claimedLaunchSchema = z.object({
  pid: pidSchema,
  parent_pid: pidSchema.nullable(),
  root_pid: pidSchema,
  attempt: z.number().int(),
  attempt_id: z.string(),
  /** The fence: renew and complete must present it. */
  fence: z.string(),
  goal: z.string(),
  input: jsonValueSchema.nullable(),
  /** The JSON Schema given at launch, for the contract request; null when none. */
  schema: z.record(z.string(), jsonValueSchema).nullable(),
  image: z.string(),
  image_spec: imageSpecSchema,
  cwd: z.string(),
  inherited_paths: z.array(inheritedPathSchema),
  capabilities: z.array(capabilityGrantSchema),
  resource_budget: budgetViewSchema,
  lease_expires_at: timestampSchema,
});
export type ClaimedLaunch = z.infer<typeof claimedLaunchSchema>;

export const renewResultSchema = z.object({
  status: processStatusSchema,
  paused: z.boolean(),
  pending_signal: pendingSignalSchema.nullable(),
  lease_expires_at: timestampSchema,
});
export type RenewResult = z.infer<typeof renewResultSchema>;

/** Published on a process's control channel so whichever worker runs it can act. */
export const controlNoticeSchema = z.object({
  pid: pidSchema,
  attempt: z.number().int(),
  signal: signalSchema,
  reason: z.string().optional(),
});
export type ControlNotice = z.infer<typeof controlNoticeSchema>;

/** The contract terminals (`@libos/contract`'s `Terminal['type']`). */
export const CONTRACT_TERMINALS = [
  'captured',
  'no_report',
  'max_steps',
  'context_yield',
  'timed_out',
  'failed',
] as const;
export const contractTerminalSchema = z.object({
  type: z.enum(CONTRACT_TERMINALS),
  reason: z.string().optional(),
});

/** A worker's report of an attempt: the contract's terminal and report, and what was used. */
export const completionSchema = z.strictObject({
  terminal: contractTerminalSchema,
  report: jsonValueSchema.optional(),
  usage: z.strictObject({
    prompt_tokens: z.number().int().min(0),
    completion_tokens: z.number().int().min(0),
    cost_usd: z.number().min(0).optional(),
    steps: z.number().int().min(0),
    wall_ms: z.number().int().min(0),
  }),
  exit_code: z.number().int().optional(),
  unaccounted: z.string().optional(),
});
export type Completion = z.infer<typeof completionSchema>;

export const completeResultSchema = z.object({
  status: processStatusSchema,
  result_oid: z.string().nullable(),
  state_generation: z.number().int(),
});
export type CompleteResult = z.infer<typeof completeResultSchema>;

const OUTCOME_BY_TERMINAL: Record<(typeof CONTRACT_TERMINALS)[number], OutcomeType> = {
  captured: 'completed',
  no_report: 'no_report',
  max_steps: 'max_steps_exhausted',
  context_yield: 'context_yield',
  timed_out: 'timed_out',
  failed: 'failed',
};
export function outcomeTypeOfTerminal(type: (typeof CONTRACT_TERMINALS)[number]): OutcomeType {
  return OUTCOME_BY_TERMINAL[type];
}

/** The structural shape of `@libos/contract`'s `ContractRunResult` (no dependency on it). */
export interface ContractRunResultLike {
  terminal: { type: (typeof CONTRACT_TERMINALS)[number]; reason?: string };
  report?: unknown;
  stepsUsed: number;
  promptTokens: number;
  completionTokens: number;
  costUsd?: number;
  unaccounted?: string;
  exitCode?: number;
  /** The reason a `context_yield` child gave. */
  yieldReason?: string;
}

/**
 * Build a completion from a contract run and the measured wall time. Validates the report as JSON.
 * A `context_yield` terminal carries the child's own reason, so the outcome an operator reads says
 * why the child yielded.
 */
export function completionFromRunResult(result: ContractRunResultLike, wallMs: number): Completion {
  const terminal =
    result.terminal.type === 'context_yield' && result.yieldReason !== undefined
      ? { type: result.terminal.type, reason: result.yieldReason }
      : result.terminal;
  return completionSchema.parse({
    terminal,
    ...(result.terminal.type === 'captured' ? { report: result.report ?? null } : {}),
    usage: {
      prompt_tokens: result.promptTokens,
      completion_tokens: result.completionTokens,
      ...(result.costUsd === undefined ? {} : { cost_usd: result.costUsd }),
      steps: result.stepsUsed,
      wall_ms: Math.max(0, Math.round(wallMs)),
    },
    ...(result.exitCode === undefined ? {} : { exit_code: result.exitCode }),
    ...(result.unaccounted === undefined ? {} : { unaccounted: result.unaccounted }),
  });
}
