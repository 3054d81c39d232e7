import { z } from 'zod';
import { budgetRequestSchema, budgetViewSchema } from './budget.js';
import { capabilitySchema } from './capability.js';
import {
  clearanceSchema,
  imageNameSchema,
  jsonValueSchema,
  labelSchema,
  oidSchema,
  pidSchema,
} from './common.js';
import {
  readArgsSchema,
  readResultSchema,
  receiveArgsSchema,
  receiveResultSchema,
  sendArgsSchema,
  sendResultSchema,
} from './messages.js';
import {
  forkModeSchema,
  outcomeSchema,
  pendingSignalSchema,
  processStatusSchema,
  processViewSchema,
  signalSchema,
  waitStateSchema,
} from './process.js';

/** An inherited path: a string is shorthand for `{path, kind: 'file', access: 'read'}`. */
export const inheritedPathArgSchema = z.union([
  z.string().min(1).max(4096),
  z.strictObject({
    path: z.string().min(1).max(4096),
    kind: z.enum(['file', 'dir']).default('file'),
    access: z.enum(['read', 'write']).default('read'),
  }),
]);

const launchShape = {
  goal: z.string().min(1).max(65_536),
  image: imageNameSchema.optional(),
  working_directory: z.string().min(1).max(4096).optional(),
  input: jsonValueSchema.optional(),
  /** A JSON Schema the child's report must satisfy; it rides the contract request's `schema`. */
  schema: z.record(z.string(), jsonValueSchema).optional(),
  inherited_paths: z.array(inheritedPathArgSchema).max(256).optional(),
  inherit_capabilities: z.array(capabilitySchema).max(256).optional(),
  resource_budget: budgetRequestSchema.optional(),
  /** Narrower clearance for the child; omitted: the parent's. */
  clearance: clearanceSchema.optional(),
};

export const spawnArgsSchema = z.strictObject(launchShape);
export const launchResultSchema = z.object({
  pid: pidSchema,
  status: processStatusSchema,
  image: z.string(),
  cwd: z.string(),
  state_generation: z.number().int(),
  resource_budget: budgetViewSchema,
});

export const OBJECT_RIGHTS = ['read', 'write'] as const;
export const objectRightsSchema = z.array(z.enum(OBJECT_RIGHTS));

export const forkArgsSchema = z.strictObject({
  ...launchShape,
  root_oids: z.array(oidSchema).max(1000).optional(),
  include_parent_roots: z.boolean().default(true),
  mode: forkModeSchema.default('worker'),
});
export const forkResultSchema = launchResultSchema.extend({
  roots: z.array(z.object({ oid: oidSchema, rights: objectRightsSchema })),
});

export const listChildrenArgsSchema = z.strictObject({ include_terminal: z.boolean().default(true) });
export const listChildrenResultSchema = z.object({ children: z.array(processViewSchema) });

export const waitArgsSchema = z.strictObject({ child_pid: pidSchema, block: z.boolean().default(true) });
export const waitResultSchema = z.object({
  ready: z.boolean(),
  child_pid: pidSchema,
  status: processStatusSchema,
  wait_state: waitStateSchema.nullable(),
  outcome: outcomeSchema.nullable(),
  result_oid: oidSchema.nullable(),
  state_generation: z.number().int(),
  /** Set when a result exists but its handle was not granted (its labels exceed the clearance). */
  result_withheld: z.literal('data_flow').nullable(),
});

/**
 * The most entries one `spawn_children` call or pids one `wait_children` call may carry (what a
 * body can hold at all); the kernel's own limits (`spawnBatchMax`, `waitChildrenMax`) are lower
 * by default and refuse a larger batch with `invalid_argument`/`batch_too_large`.
 */
export const BATCH_MAX = 10_000;

export const spawnChildrenArgsSchema = z.strictObject({
  /** One entry per child, each with the arguments `spawn_child_process` takes. */
  children: z.array(spawnArgsSchema).min(1).max(BATCH_MAX),
});
export const spawnChildrenResultSchema = z.object({
  /** One per entry, in order (pids increasing). */
  children: z.array(launchResultSchema),
});

export const WAIT_MODES = ['any', 'all'] as const;
export const waitChildrenArgsSchema = z.strictObject({
  child_pids: z.array(pidSchema).min(1).max(BATCH_MAX),
  /** `any`: ready once one of them is terminal; `all`: once every one is. */
  mode: z.enum(WAIT_MODES).default('any'),
  block: z.boolean().default(true),
});
export const waitChildrenResultSchema = z.object({
  ready: z.boolean(),
  mode: z.enum(WAIT_MODES),
  /** The children of the set that are terminal, in the order asked. */
  ended_pids: z.array(pidSchema),
  /** One per pid asked, in order, as `wait_child_process` answers for it. */
  children: z.array(waitResultSchema),
});

export const signalArgsSchema = z.strictObject({
  child_pid: pidSchema,
  signal: signalSchema,
  reason: z.string().max(1000).optional(),
});
export const signalResultSchema = z.object({
  child_pid: pidSchema,
  status: processStatusSchema,
  state_generation: z.number().int(),
  pending_signal: pendingSignalSchema.nullable(),
});

export const mergeArgsSchema = z.strictObject({
  child_pid: pidSchema,
  include_child_created: z.boolean().default(false),
});
export const MERGE_SKIP_REASONS = ['goal', 'not_child_owned', 'released', 'ephemeral'] as const;
export const mergeResultSchema = z.object({
  merged_oids: z.array(oidSchema),
  skipped_oids: z.array(z.object({ oid: oidSchema, reason: z.enum(MERGE_SKIP_REASONS) })),
});

export const exitArgsSchema = z.strictObject({
  payload: jsonValueSchema.optional(),
  failed: z.boolean().default(false),
  reason: z.string().max(4096).optional(),
});
export const exitResultSchema = z.object({ status: processStatusSchema, result_oid: oidSchema.nullable() });

export const createObjectArgsSchema = z.strictObject({
  payload: jsonValueSchema,
  labels: z.array(labelSchema).max(32).optional(),
  /** Add the object to the caller's memory-view roots (default true). */
  root: z.boolean().default(true),
});
export const createObjectResultSchema = z.object({
  oid: oidSchema,
  version: z.number().int(),
  labels: z.array(z.string()),
});

export const OBJECT_KINDS = ['GOAL', 'PROCESS', 'PROCESS_RESULT'] as const;
export const readObjectArgsSchema = z.strictObject({ oid: oidSchema });
export const readObjectResultSchema = z.object({
  oid: oidSchema,
  payload: jsonValueSchema,
  owner: pidSchema,
  rights: objectRightsSchema,
  labels: z.array(z.string()),
  version: z.number().int(),
  kind: z.enum(OBJECT_KINDS),
});

export const writeObjectArgsSchema = z.strictObject({
  oid: oidSchema,
  payload: jsonValueSchema,
  /** Compare-and-set: refuse with `failed_precondition`/`version_conflict` unless the version matches. */
  if_version: z.number().int().min(1).optional(),
});
export const writeObjectResultSchema = z.object({ oid: oidSchema, version: z.number().int() });

export const getProcessArgsSchema = z.strictObject({ pid: pidSchema.optional() });

/** Every tool: its arguments (with defaults) and its result. Routes, SDK and MCP lists come from this. */
export const TOOLS = {
  spawn_child_process: {
    args: spawnArgsSchema,
    result: launchResultSchema,
    description: 'Spawn a fresh direct child with a new namespace and a goal-only memory view.',
  },
  fork_child_process: {
    args: forkArgsSchema,
    result: forkResultSchema,
    description: 'Fork a direct child with an attenuated view of selected parent objects.',
  },
  list_child_processes: {
    args: listChildrenArgsSchema,
    result: listChildrenResultSchema,
    description: 'List direct children (terminal rows included by default).',
  },
  wait_child_process: {
    args: waitArgsSchema,
    result: waitResultSchema,
    description: 'Observe or block on one direct child until it is terminal.',
  },
  spawn_children: {
    args: spawnChildrenArgsSchema,
    result: spawnChildrenResultSchema,
    description:
      'Spawn a batch of direct children in one step, each with its own goal and input: all are created or none (a refusal names the entry).',
  },
  wait_children: {
    args: waitChildrenArgsSchema,
    result: waitChildrenResultSchema,
    description:
      'Observe or block on a set of direct children until any one (mode any) or every one (mode all) is terminal.',
  },
  signal_child_process: {
    args: signalArgsSchema,
    result: signalResultSchema,
    description: 'Pause, resume, cancel or terminate a direct nonterminal child.',
  },
  merge_child_memory: {
    args: mergeArgsSchema,
    result: mergeResultSchema,
    description: 'Once, adopt a terminal direct child’s roots (and created objects); release the rest.',
  },
  send_process_message: {
    args: sendArgsSchema,
    result: sendResultSchema,
    description: 'Send a durable message to self, the parent or a direct child.',
  },
  read_process_messages: {
    args: readArgsSchema,
    result: readResultSchema,
    description: 'Nonblocking mailbox snapshot; acknowledges returned unread messages by default.',
  },
  receive_process_messages: {
    args: receiveArgsSchema,
    result: receiveResultSchema,
    description: 'Like read, but blocks by default until a matching unread message arrives.',
  },
  process_exit: {
    args: exitArgsSchema,
    result: exitResultSchema,
    description: 'End the calling process: exited with an optional result payload, or failed.',
  },
  create_object: {
    args: createObjectArgsSchema,
    result: createObjectResultSchema,
    description: 'Create an object owned by the caller.',
  },
  read_object: {
    args: readObjectArgsSchema,
    result: readObjectResultSchema,
    description: 'Read an object the caller holds a handle to.',
  },
  write_object: {
    args: writeObjectArgsSchema,
    result: writeObjectResultSchema,
    description: 'Write an object the caller holds write rights on.',
  },
  get_process: {
    args: getProcessArgsSchema,
    result: processViewSchema,
    description: 'Show the calling process or one of its direct children.',
  },
} as const;

export type ToolName = keyof typeof TOOLS;
export const TOOL_NAMES = Object.keys(TOOLS) as ToolName[];
/** What a caller sends (defaults optional). */
export type ToolArgs<N extends ToolName> = z.input<(typeof TOOLS)[N]['args']>;
/** What the kernel sees after parsing (defaults applied). */
export type ParsedToolArgs<N extends ToolName> = z.infer<(typeof TOOLS)[N]['args']>;
export type ToolResult<N extends ToolName> = z.infer<(typeof TOOLS)[N]['result']>;

/** The mailbox tools: an interrupt notice is due before the next call of any other tool. */
export const MESSAGE_TOOLS: readonly ToolName[] = [
  'send_process_message',
  'read_process_messages',
  'receive_process_messages',
];
