import { RESULT_FILE_ARG } from '@libos/protocol';

/**
 * Contract children written inline in sh, for tests that launch many of them (a shell child
 * costs a fork, a TypeScript one a Node start). `$1` is the result file, `$2…` the extras.
 */
export function shImage(script: string, ...extra: string[]): { command: string; args: string[] } {
  return { command: 'sh', args: ['-c', script, 'sh', RESULT_FILE_ARG, ...extra] };
}

/**
 * Reads the request line into `$request` and its request id into `$id`. First `umask 0`: the
 * children of a test append to shared files in its scratch dir, and each runs as a uid of its own.
 */
export const READ_REQUEST = `umask 0; read -r request; id=$(printf '%s' "$request" | sed 's/.*"request_id":"\\([^"]*\\)".*/\\1/')`;

/** Sets `$<variable>` to the first whole number named `"<name>":` in the request (the spawn's input). */
export function numberFromRequest(name: string, variable = name): string {
  return `${variable}=$(printf '%s' "$request" | sed -n 's/.*"${name}":\\([0-9][0-9]*\\).*/\\1/p')`;
}

/**
 * Writes a result atomically. `fields` follow `request_id` inside the JSON object, as a printf
 * format (no single quotes); `args` are shell words for its `%s`/`%d` conversions.
 */
export function writeResult(fields: string, ...args: string[]): string {
  return `printf '{"version":1,"request_id":"%s",${fields}}' "$id" ${args.join(' ')} > "$1.tmp" && mv "$1.tmp" "$1"`;
}

/** Blocks (cheaply) until FILE exists: how a test holds children and releases them. */
export function waitForFile(file: string, everySeconds = 0.1): string {
  return `while [ ! -e "${file}" ]; do sleep ${everySeconds}; done`;
}

/** Sets `$<variable>` to the first string of `[a-z0-9_-]` named `"<name>":` in the request. */
export function wordFromRequest(name: string, variable = name): string {
  return `${variable}=$(printf '%s' "$request" | sed -n 's/.*"${name}":"\\([a-z0-9_-]*\\)".*/\\1/p')`;
}

/**
 * Calls a tool as the child itself (its `LIBOS_TOKEN`) with curl; the body is a printf format and
 * its args. The answer goes to stdout (drained); a refusal ends the script with status 7.
 */
export function asSelf(tool: string, bodyFormat: string, ...args: string[]): string {
  const body = `"$(printf '${bodyFormat}' ${args.join(' ')})"`;
  return `curl -sS -f -X POST "$LIBOS_URL/v1/tools/${tool}" -H "authorization: Bearer $LIBOS_TOKEN" -H "content-type: application/json" --data ${body} || exit 7`;
}

/** A zero usage block for results, as printf text. */
export const NO_USAGE =
  '"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":0}';
