/** The message of a thrown value, for `<what>: <error>` texts. */
export function textOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** One stdout line as JSON; blank and non-JSON lines are `undefined` (ignored by the dialects). */
export function parseJsonLine(line: string): unknown {
  const trimmed = line.trim();
  if (trimmed === '') return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    return undefined;
  }
}
