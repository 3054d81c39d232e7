/** A parsed JSON object (not an array, not null). */
export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function hasKey(object: JsonObject, key: string): boolean {
  return Object.hasOwn(object, key);
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
