import { z } from 'zod';

/** A JSON value: what reports, inputs and schemas are, and what a journal stores. */
export type Json = z.infer<typeof jsonSchema>;

export const jsonSchema = z.json();

/**
 * JSON equality for work identity: object key order does not matter, array order does, and
 * numbers compare by value (JSON has no 1 vs 1.0 distinction once parsed).
 */
export function jsonEqual(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null) return false;
  if (typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => jsonEqual(item, b[i]));
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]));
}
