import { z } from 'zod';

/** A root pid is `p<base36>`; its descendants are `<root>.<n>` (n from the tree's counter). */
export const PID_PATTERN = /^p[0-9a-z]{4,32}(\.[1-9][0-9]{0,15})?$/;
/** Objects and messages are named inside their tree: `<root>/o<n>`, `<root>/m<n>`. */
export const OID_PATTERN = /^p[0-9a-z]{4,32}\/o[1-9][0-9]{0,15}$/;
export const MESSAGE_ID_PATTERN = /^p[0-9a-z]{4,32}\/m[1-9][0-9]{0,15}$/;

export const pidSchema = z.string().regex(PID_PATTERN, 'not a pid');
export const oidSchema = z.string().regex(OID_PATTERN, 'not an object id');
export const messageIdSchema = z.string().regex(MESSAGE_ID_PATTERN, 'not a message id');

/** A data-flow label, e.g. `secret`, `tenant:acme`, `pii`. */
export const labelSchema = z.string().regex(/^[a-z0-9][a-z0-9:._-]{0,63}$/, 'not a label');
/** A clearance names the labels a process may hold; `*` clears every label. */
export const clearanceSchema = z.array(z.union([z.literal('*'), labelSchema])).max(64);

export const imageNameSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
    'not an image name (1-64 letters, digits, ".", "_" or "-", starting with a letter or digit)',
  );

export const jsonValueSchema = z.json();
export type JsonValue = z.infer<typeof jsonValueSchema>;

/** Timestamps on the wire are ISO 8601 strings (UTC). */
export const timestampSchema = z.string();

export function rootOf(pidOrId: string): string {
  const slash = pidOrId.indexOf('/');
  const head = slash >= 0 ? pidOrId.slice(0, slash) : pidOrId;
  const dot = head.indexOf('.');
  return dot >= 0 ? head.slice(0, dot) : head;
}
