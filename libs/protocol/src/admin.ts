import { z } from 'zod';
import { budgetRequestSchema } from './budget.js';
import { capabilityRequirementSchema, capabilitySchema } from './capability.js';
import { clearanceSchema, imageNameSchema, jsonValueSchema, pidSchema, timestampSchema } from './common.js';
import { poolSchema } from './launch-queue.js';
import { processStatusSchema, signalSchema } from './process.js';

export const RESULT_FILE_ARG = '{result_file}';

/**
 * An image's `cwd`: an absolute path with no `.` or `..` segment and no NUL (a root's cwd comes
 * from it, and every path of its tree is confined below it), stored without `//` or a trailing `/`.
 */
export const imageCwdSchema = z
  .string()
  .max(4096)
  .superRefine((path, ctx) => {
    const problem = !path.startsWith('/')
      ? 'must be an absolute path'
      : path.includes('\0')
        ? 'must not contain a NUL byte'
        : path.split('/').some((segment) => segment === '.' || segment === '..')
          ? 'must not contain . or .. segments'
          : undefined;
    if (problem) ctx.addIssue({ code: 'custom', message: `${problem}: ${JSON.stringify(path)}` });
  })
  .transform((path) => `/${path.split('/').filter(Boolean).join('/')}`);

/** Per-child limits of an image (enforced by the worker's sandbox: cgroups, else rlimits). */
export const imageLimitsSchema = z.strictObject({
  memory_mb: z.number().int().min(16).max(1_048_576).optional(),
  pids: z.number().int().min(4).max(65_536).optional(),
  cpu_ms: z.number().int().positive().optional(),
  file_size_mb: z.number().int().min(1).max(1_048_576).optional(),
  open_files: z.number().int().min(16).max(1_048_576).optional(),
});
export type ImageLimits = z.infer<typeof imageLimitsSchema>;

const imageSpecFields = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  cwd: imageCwdSchema.optional(),
  env: z.record(z.string(), z.string()).optional(),
  kind: z.string().min(1).max(128).optional(),
  pool: poolSchema.default('default'),
  deadline_ms: z.number().int().positive().optional(),
  cancel_grace_ms: z.number().int().min(0).optional(),
  required_capabilities: z.array(capabilityRequirementSchema).default([]),
  default_budget: budgetRequestSchema.optional(),
  /** Skills a process of this image starts with (its default skill snapshot). */
  skills: z.array(z.string().min(1).max(128)).max(256).default([]),
  /** What one child may use on its worker's host; omitted fields take the worker's defaults. */
  limits: imageLimitsSchema.optional(),
  /** Host paths the child's sandbox shows read-only besides the system directories (its runtime). */
  runtime: z.array(imageCwdSchema).max(64).optional(),
  /** `none`: the child gets a network namespace of its own (loopback only, no coordinator). */
  network: z.enum(['host', 'none']).optional(),
});

/** How a worker launches a child. `args` must name `{result_file}`. */
export const imageSpecSchema = imageSpecFields.refine(
  (image) => image.args.some((arg) => arg.includes(RESULT_FILE_ARG)),
  { message: `args must name ${RESULT_FILE_ARG}`, path: ['args'] },
);
export type ImageSpec = z.infer<typeof imageSpecSchema>;
export type ImageSpecInput = z.input<typeof imageSpecSchema>;

/**
 * A stored spec as an answer shows it: its paths are already normalized, so plain strings (the
 * request schema's normalizing transform cannot be run backwards to encode a response).
 */
const imageSpecViewSchema = imageSpecFields.extend({
  cwd: z.string().optional(),
  runtime: z.array(z.string()).optional(),
});

export const imageViewSchema = z.object({
  name: imageNameSchema,
  spec: imageSpecViewSchema,
  kind: z.string(),
  updated_at: timestampSchema,
});
export type ImageView = z.infer<typeof imageViewSchema>;
export const listImagesResultSchema = z.object({ images: z.array(imageViewSchema) });

/** A root process. Without `launch` its caller drives it through the tools API with the token. */
export const createRootArgsSchema = z.strictObject({
  goal: z.string().min(1).max(65_536),
  image: imageNameSchema.optional(),
  /** Omitted: the default root grants (`process:spawn` use and `image:*` read, both delegable). */
  capabilities: z.array(capabilitySchema).max(256).optional(),
  resource_budget: budgetRequestSchema.optional(),
  /** Omitted: `["*"]`. */
  clearance: clearanceSchema.optional(),
  launch: z.boolean().default(false),
  cwd: z.string().min(1).max(4096).optional(),
  input: jsonValueSchema.optional(),
  /** A JSON Schema the launched root's report must satisfy (the contract request's `schema`). */
  schema: z.record(z.string(), jsonValueSchema).optional(),
  /**
   * How long the tree's processes are kept after they end (once nothing can still ask for them)
   * before they are deleted; omitted: the coordinator's LIBOS_RETENTION_MS (default 7 days).
   */
  retention_ms: z
    .number()
    .int()
    .min(0)
    .max(10 * 365 * 24 * 3600 * 1000)
    .optional(),
});
export type CreateRootArgs = z.infer<typeof createRootArgsSchema>;
export type CreateRootInput = z.input<typeof createRootArgsSchema>;

export const createRootResultSchema = z.object({
  pid: pidSchema,
  /** The root's process token; null for a launched root (its worker mints one at claim). */
  token: z.string().nullable(),
  status: processStatusSchema,
});
export type CreateRootResult = z.infer<typeof createRootResultSchema>;

export const adminSignalArgsSchema = z.strictObject({
  signal: signalSchema,
  reason: z.string().max(1000).optional(),
});
