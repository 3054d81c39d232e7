import { z } from 'zod';
import { jsonValueSchema, timestampSchema } from './common.js';

/**
 * A capability entry as a launch names it: a resource, nonempty rights, optional constraints.
 * `delegable` says whether the holder may pass it on; `expires_at` bounds its life.
 * Resources are strings such as `process:spawn`, `image:<name>`, `fs:/work/*`; a trailing `*`
 * covers every resource with that prefix.
 */
export const capabilitySchema = z.strictObject({
  resource: z.string().min(1).max(512),
  rights: z.array(z.string().min(1).max(64)).min(1).max(32),
  constraints: z.record(z.string(), jsonValueSchema).optional(),
  delegable: z.boolean().optional(),
  expires_at: timestampSchema.optional(),
});
export type Capability = z.infer<typeof capabilitySchema>;
export type CapabilityInput = z.input<typeof capabilitySchema>;

/** A grant as a process holds it. */
export const capabilityGrantSchema = z.object({
  resource: z.string(),
  rights: z.array(z.string()),
  constraints: z.record(z.string(), jsonValueSchema),
  delegable: z.boolean(),
  expires_at: timestampSchema.nullable(),
});
export type CapabilityGrant = z.infer<typeof capabilityGrantSchema>;

/** What an image declares it needs. Declaring grants nothing. */
export const capabilityRequirementSchema = z.strictObject({
  resource: z.string().min(1).max(512),
  rights: z.array(z.string().min(1).max(64)).min(1).max(32),
});
export type CapabilityRequirement = z.infer<typeof capabilityRequirementSchema>;

/** Well-known resources and the right each check asks for. */
export const SPAWN_RESOURCE = 'process:spawn';
export const SPAWN_RIGHT = 'use';
export const IMAGE_READ_RIGHT = 'read';
export function imageResource(name: string): string {
  return `image:${name}`;
}
