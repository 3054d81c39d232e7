import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildEnding, Usage } from '@libos/contract';
import { z } from 'zod';
import { cliEnding } from '../ending.js';
import { cliEnv, LIBOS_ENV, LIBOS_SERVER, type LibosMcp, libosMcpAllowed } from '../libos-mcp.js';
import type { ShimOptions } from '../options.js';
import type { ShimRequest } from '../request.js';
import { type CliEnding, runCli } from '../run-cli.js';
import type { ShimDialect } from '../serve.js';
import { parseJsonLine, textOf } from '../text.js';
import { addTokens, type Tokens, toUsage } from '../tokens.js';

// Codex (`codex exec --json`, recorded against codex-cli 0.151) as a contract child. Steps are
// completed items other than reasoning and notices; usage arrives per turn on `turn.completed`
// and is unpriced; the answer is the last `agent_message`. Codex does not flush usage on SIGINT,
// so a capped or cancelled run usually carries no usage, and the parent records it unaccounted.

/** The CLI argv: the prompt is the last positional. */
export function codexArgs(
  request: ShimRequest,
  options: ShimOptions,
  schemaPath?: string,
  libos?: LibosMcp,
): string[] {
  const sandbox = options.writable || request.kind === 'worker' ? 'workspace-write' : 'read-only';
  const args = ['exec', '--json', '--skip-git-repo-check', '-s', sandbox];
  if (options.model !== undefined) args.push('-m', options.model);
  if (schemaPath !== undefined) args.push('--output-schema', schemaPath);
  if (libos !== undefined) for (const setting of codexMcpSettings(libos)) args.push('-c', setting);
  args.push(...options.extra);
  // A prompt that looks like a flag must not be parsed as one.
  if (request.prompt.startsWith('-') && !options.extra.includes('--')) args.push('--');
  args.push(request.prompt);
  return args;
}

/** A blocking `wait_child_process` lasts as long as the child does: far beyond Codex's 60 s default. */
export const CODEX_TOOL_TIMEOUT_SEC = 24 * 3600;

/**
 * The libos server as `-c` overrides of Codex's `mcp_servers.libos` (TOML values). Codex starts
 * MCP servers with a scrubbed environment, so the three variables are passed by name
 * (`env_vars`), never by value; `required` makes the first turn wait for the server (and fail
 * the run if it cannot start); the libos tools are approved, since `exec` never asks.
 */
export function codexMcpSettings(libos: LibosMcp): string[] {
  const key = `mcp_servers.${LIBOS_SERVER}`;
  const settings = [
    `${key}.command=${JSON.stringify(libos.command)}`,
    `${key}.args=${JSON.stringify(libos.args)}`,
    `${key}.env_vars=${JSON.stringify(LIBOS_ENV)}`,
    `${key}.required=true`,
    `${key}.startup_timeout_sec=60`,
    `${key}.tool_timeout_sec=${CODEX_TOOL_TIMEOUT_SEC}`,
    `${key}.default_tools_approval_mode="approve"`,
  ];
  if (libos.tools !== undefined) settings.push(`${key}.enabled_tools=${JSON.stringify(libos.tools)}`);
  return settings;
}

const count = z.number().int().nonnegative();
const threadStarted = z.object({ type: z.literal('thread.started'), thread_id: z.string() });
const itemCompleted = z.object({
  type: z.literal('item.completed'),
  item: z.object({
    type: z.string().optional().catch(undefined),
    text: z.string().optional().catch(undefined),
    message: z.string().optional().catch(undefined),
  }),
});
const turnCompleted = z.object({
  type: z.literal('turn.completed'),
  usage: z.object({ input_tokens: count, output_tokens: count, cached_input_tokens: count.catch(0) }),
});
const turnFailed = z.object({ type: z.literal('turn.failed'), error: z.object({ message: z.string() }) });
const streamError = z.object({ type: z.literal('error'), message: z.string() });

const apiErrorBody = z.object({ error: z.object({ message: z.string() }) });

/** Codex passes a refused request's body on as the message (0.169): `{"error":{"message":…}}`. */
function apiErrorText(message: string): string | undefined {
  const body = apiErrorBody.safeParse(parseJsonLine(message));
  return body.success ? `API error: ${body.data.error.message}` : undefined;
}

export interface CodexReport {
  answer: unknown;
  engine: 'codex';
  thread_id?: string;
  notices?: string[];
}

const MCP_FAILED = /required MCP servers failed to initialize: (.+)$/;

/** What the shim has learned from `codex exec --json` so far. Unknown lines are ignored. */
export class CodexStream {
  steps = 0;
  failure: string | undefined;
  readonly notices: string[] = [];
  #threadId: string | undefined;
  #lastMessage: string | undefined;
  #tokens: Tokens | undefined;

  observe(line: string): void {
    const json = parseJsonLine(line);
    if (json === undefined) return;
    const thread = threadStarted.safeParse(json);
    if (thread.success) {
      this.#threadId = thread.data.thread_id;
      return;
    }
    const item = itemCompleted.safeParse(json);
    if (item.success) {
      this.#item(item.data.item);
      return;
    }
    const turn = turnCompleted.safeParse(json);
    if (turn.success) {
      const { input_tokens: input, output_tokens: output, cached_input_tokens: cached } = turn.data.usage;
      const hit = Math.min(cached, input);
      const tokens = { prompt: input, completion: output, hit, miss: input - hit };
      this.#tokens = this.#tokens === undefined ? tokens : addTokens(this.#tokens, tokens);
      return;
    }
    const failed = turnFailed.safeParse(json);
    const error = streamError.safeParse(json);
    const message = failed.success
      ? failed.data.error.message
      : error.success
        ? error.data.message
        : undefined;
    if (message !== undefined) this.failure ??= `codex: ${apiErrorText(message) ?? message}`;
  }

  /**
   * A stderr line. Codex 0.169 reports a required MCP server that failed to start only there
   * (`ERROR codex_core::session: Failed to create session: required MCP servers failed to
   * initialize: libos: handshaking with MCP server failed: …`), then exits 1 with nothing on
   * stdout: the failure is named from it.
   */
  observeStderr(line: string): void {
    const match = MCP_FAILED.exec(line);
    if (match === null || this.failure !== undefined) return;
    const detail = (match[1] ?? '').replace(/ \(code -?\d+\)$/, '').slice(0, 500);
    this.failure = `codex: MCP server failed to start: ${detail}`;
  }

  #item(item: z.infer<typeof itemCompleted>['item']): void {
    if (item.type === 'reasoning') return;
    // An `error` item is a notice (e.g. an unsupported service tier): the run goes on.
    if (item.type === 'error') {
      if (item.message !== undefined) this.notices.push(item.message);
      return;
    }
    this.steps += 1;
    if (item.type === 'agent_message' && item.text !== undefined) this.#lastMessage = item.text;
  }

  /** Summed `turn.completed` usage, or nothing when no turn completed. */
  usage(): Usage | undefined {
    return this.#tokens === undefined ? undefined : toUsage(this.#tokens);
  }

  /** The report, once an agent message arrived; in structured mode the message is parsed as JSON. */
  report(structured: boolean): CodexReport | undefined {
    if (this.#lastMessage === undefined) return undefined;
    let answer: unknown = this.#lastMessage;
    if (structured) {
      try {
        answer = JSON.parse(this.#lastMessage);
      } catch {
        // Not JSON after all: the text is still the answer.
      }
    }
    const report: CodexReport = { answer, engine: 'codex' };
    if (this.#threadId !== undefined) report.thread_id = this.#threadId;
    if (this.notices.length > 0) report.notices = [...this.notices];
    return report;
  }
}

/** The result for a finished CLI run (reference §3.3 "Endings"). */
export function codexEnding(
  stream: CodexStream,
  cli: CliEnding,
  structured: boolean,
  schema?: unknown,
): ChildEnding {
  return cliEnding('codex', cli, {
    usage: stream.usage(),
    steps: stream.steps,
    failure: stream.failure,
    report: () => stream.report(structured),
    ...(schema === undefined ? {} : { schema }),
  });
}

export const codexDialect: ShimDialect = {
  name: 'codex',
  async run(options, request, context) {
    // Codex takes its schema from a file: a request schema goes to a scratch directory for the
    // run; otherwise `--schema FILE` is passed through as the path.
    let scratch: string | undefined;
    try {
      let schemaPath = options.schema;
      let schema: unknown = request.schema;
      if (schema === undefined && options.schema !== undefined) {
        try {
          schema = JSON.parse(await readFile(options.schema, 'utf8'));
        } catch (error) {
          return { status: 'failed', reason: `cannot read --schema ${options.schema}: ${textOf(error)}` };
        }
      }
      if (request.schema !== undefined) {
        try {
          scratch = await mkdtemp(join(tmpdir(), 'workflow-codex-schema-'));
          schemaPath = join(scratch, 'schema.json');
          await writeFile(schemaPath, JSON.stringify(request.schema));
        } catch (error) {
          return { status: 'failed', reason: `cannot write the schema file: ${textOf(error)}` };
        }
      }
      const structured = schemaPath !== undefined;
      const stream = new CodexStream();
      const maxSteps = request.max_steps;
      const cli = await runCli({
        command: options.command,
        args: codexArgs(request, options, schemaPath, await libosMcpAllowed(options)),
        env: await cliEnv(),
        ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
        cancel: context.cancel,
        observe: (line) => {
          stream.observe(line);
          return maxSteps !== undefined && stream.steps > maxSteps ? 'stop' : 'continue';
        },
        observeStderr: (line) => stream.observeStderr(line),
      });
      return codexEnding(stream, cli, structured, options.schemaCheck ? schema : undefined);
    } finally {
      if (scratch !== undefined) await rm(scratch, { recursive: true, force: true }).catch(() => {});
    }
  },
};
