import { readFile } from 'node:fs/promises';
import type { ChildEnding, Usage } from '@libos/contract';
import { z } from 'zod';
import { cliEnding } from '../ending.js';
import { cliEnv, LIBOS_SERVER, type LibosMcp, libosMcpAllowed } from '../libos-mcp.js';
import type { ShimOptions } from '../options.js';
import type { ShimRequest } from '../request.js';
import { type CliEnding, runCli } from '../run-cli.js';
import type { ShimDialect } from '../serve.js';
import { parseJsonLine, textOf } from '../text.js';
import { addTokens, type Tokens, toUsage, ZERO_TOKENS } from '../tokens.js';

// Claude Code (`claude -p --output-format stream-json --verbose`, recorded against 2.1.258 and
// 2.1.328) as a contract child. The stream has one `assistant` line per content block of a message
// (thinking, text, tool_use), each with that message's running usage; the final `result` carries
// the run's totals, priced. So a step is a distinct message id, and the cost is charged once, from
// the result. Two exceptions seen on 2.1.328: a run cancelled mid-reply ends with an all-zero
// `usage` and the real counts only in `modelUsage`; an API error arrives as a synthetic assistant
// message (`is_api_error_message`, model `<synthetic>`) and a `success` result with `is_error`.

const MUTATING_TOOLS = ['Edit', 'Write', 'MultiEdit', 'NotebookEdit', 'Bash'];

/**
 * The CLI argv. The tool lists are variadic, and the prompt may start with `-`, so the prompt
 * comes last, after `--`, which ends both.
 */
export function claudeArgs(
  request: ShimRequest,
  options: ShimOptions,
  schemaText?: string,
  libos?: LibosMcp,
): string[] {
  const args = ['-p', '--output-format', 'stream-json', '--verbose'];
  if (options.model !== undefined) args.push('--model', options.model);
  if (schemaText !== undefined) args.push('--json-schema', schemaText);
  if (libos !== undefined) args.push('--mcp-config', claudeMcpConfig(libos));
  args.push(...options.extra);
  const allowed = libos === undefined ? [] : claudeAllowedTools(libos);
  if (options.writable || request.kind === 'worker') {
    args.push('--permission-mode', 'acceptEdits', '--allowedTools', ...MUTATING_TOOLS, ...allowed);
  } else {
    if (allowed.length > 0) args.push('--allowedTools', ...allowed);
    args.push('--disallowedTools', ...MUTATING_TOOLS);
  }
  args.push('--', request.prompt);
  return args;
}

/** The libos server as `--mcp-config` JSON. It names no secret: the server inherits the CLI's environment. */
export function claudeMcpConfig(libos: LibosMcp): string {
  return JSON.stringify({
    mcpServers: { [LIBOS_SERVER]: { type: 'stdio', command: libos.command, args: libos.args } },
  });
}

/** `mcp__libos` (every libos tool), or the narrower list the image named. */
export function claudeAllowedTools(libos: LibosMcp): string[] {
  const prefix = `mcp__${LIBOS_SERVER}`;
  return libos.tools === undefined ? [prefix] : libos.tools.map((tool) => `${prefix}__${tool}`);
}

const count = z.number().int().nonnegative();
// The fields read from a `usage` object; anything malformed there means "no usage on this line".
const usageSchema = z.object({
  input_tokens: count,
  output_tokens: count,
  cache_read_input_tokens: count.catch(0),
  cache_creation_input_tokens: count.catch(0),
});
const optionalUsage = usageSchema.optional().catch(undefined);

const assistantLine = z.object({
  type: z.literal('assistant'),
  /** Set on the synthetic message that carries an API error: not a model request, so not a step. */
  is_api_error_message: z.boolean().catch(false).default(false),
  message: z.object({
    id: z.string().optional().catch(undefined),
    model: z.string().optional().catch(undefined),
    usage: optionalUsage,
  }),
});

/** The first line: which MCP servers started (`status` is `connected`, `failed`, `pending`…). */
const initLine = z.object({
  type: z.literal('system'),
  subtype: z.literal('init'),
  mcp_servers: z
    .array(z.object({ name: z.string(), status: z.string() }))
    .catch([])
    .default([]),
});

// Per model: the run's counts, present even when a cancelled run's `usage` is all zero.
const modelUsageEntry = z.object({
  inputTokens: count.catch(0),
  outputTokens: count.catch(0),
  cacheReadInputTokens: count.catch(0),
  cacheCreationInputTokens: count.catch(0),
});

const resultLine = z.object({
  type: z.literal('result'),
  subtype: z.string().catch('success'),
  is_error: z.boolean().catch(false),
  result: z.string().catch(''),
  structured_output: z.unknown().optional(),
  session_id: z.string().optional().catch(undefined),
  num_turns: z.number().int().optional().catch(undefined),
  total_cost_usd: z.number().nonnegative().optional().catch(undefined),
  usage: optionalUsage,
  modelUsage: z.record(z.string(), modelUsageEntry).optional().catch(undefined),
  api_error_status: z.number().int().nullable().optional().catch(undefined),
});

/** Cache reads are hits; fresh input and cache creation are misses; prompt is all three. */
export function claudeTokens(usage: z.infer<typeof usageSchema>): Tokens {
  const read = usage.cache_read_input_tokens;
  const created = usage.cache_creation_input_tokens;
  return {
    prompt: usage.input_tokens + read + created,
    completion: usage.output_tokens,
    hit: read,
    miss: usage.input_tokens + created,
  };
}

export interface ClaudeReport {
  answer: unknown;
  engine: 'claude';
  session_id?: string;
  num_turns?: number;
  cost_usd?: number;
  /** Things the run should not hide, e.g. an MCP server that failed to start. */
  notices?: string[];
}

/** What the shim has learned from the stream so far. Unknown lines and fields are ignored. */
export class ClaudeStream {
  steps = 0;
  failure: string | undefined;
  exhausted = false;
  /** MCP servers the CLI's `system/init` line reported as failed. */
  readonly mcpFailures: string[] = [];
  readonly #snapshots = new Map<string, Tokens>();
  #resultTokens: Tokens | undefined;
  #modelTokens: Tokens | undefined;
  #answer: { value: unknown } | undefined;
  #sessionId: string | undefined;
  #numTurns: number | undefined;
  #costUsd: number | undefined;

  observe(line: string): void {
    const json = parseJsonLine(line);
    if (json === undefined) return;
    const assistant = assistantLine.safeParse(json);
    if (assistant.success) {
      if (!assistant.data.is_api_error_message) this.#message(assistant.data.message);
      return;
    }
    const result = resultLine.safeParse(json);
    if (result.success) {
      this.#result(result.data);
      return;
    }
    const init = initLine.safeParse(json);
    if (init.success) {
      for (const server of init.data.mcp_servers) {
        if (server.status === 'failed' && !this.mcpFailures.includes(server.name))
          this.mcpFailures.push(server.name);
      }
    }
  }

  #message(message: z.infer<typeof assistantLine>['message']): void {
    // An id-less message is its own step: a synthetic id that no real one can collide with.
    const id = message.id ?? `\u0000anonymous-${this.steps + 1}`;
    const firstSeen = !this.#snapshots.has(id);
    if (firstSeen) this.steps += 1;
    if (message.usage !== undefined) this.#snapshots.set(id, claudeTokens(message.usage));
    else if (firstSeen) this.#snapshots.set(id, ZERO_TOKENS);
  }

  #result(result: z.infer<typeof resultLine>): void {
    if (result.session_id !== undefined) this.#sessionId = result.session_id;
    if (result.num_turns !== undefined) this.#numTurns = result.num_turns;
    if (result.total_cost_usd !== undefined) this.#costUsd = result.total_cost_usd;
    if (result.usage !== undefined) this.#resultTokens = claudeTokens(result.usage);
    if (result.modelUsage !== undefined) {
      this.#modelTokens = Object.values(result.modelUsage)
        .map((entry) =>
          claudeTokens({
            input_tokens: entry.inputTokens,
            output_tokens: entry.outputTokens,
            cache_read_input_tokens: entry.cacheReadInputTokens,
            cache_creation_input_tokens: entry.cacheCreationInputTokens,
          }),
        )
        .reduce(addTokens, ZERO_TOKENS);
    }
    const apiError = result.api_error_status ?? undefined;
    if (result.subtype === 'error_max_turns') {
      this.exhausted = true;
    } else if (result.is_error && apiError !== undefined) {
      // A `success` result with `is_error` and an HTTP status: the model API refused the request.
      const text = result.result.replace(/^API Error:\s*/i, '').replace(new RegExp(`^${apiError}:?\\s*`), '');
      this.failure = `claude: API error ${apiError}: ${text}`;
    } else if (result.is_error || result.subtype !== 'success') {
      this.failure =
        result.result === '' ? `claude: ${result.subtype}` : `claude: ${result.subtype}: ${result.result}`;
    } else {
      const structured = result.structured_output;
      this.#answer = { value: structured !== undefined && structured !== null ? structured : result.result };
    }
  }

  /**
   * The run's usage: the largest of the result's totals, its per-model counts and the sum of the
   * last snapshot of every message (a run cancelled mid-reply reports zero totals, and a run cut
   * short has no result at all); priced when the result stated a cost; nothing when nothing was seen.
   */
  usage(): Usage | undefined {
    const candidates: Tokens[] = [];
    if (this.#resultTokens !== undefined) candidates.push(this.#resultTokens);
    if (this.#modelTokens !== undefined) candidates.push(this.#modelTokens);
    if (this.#snapshots.size > 0)
      candidates.push([...this.#snapshots.values()].reduce(addTokens, ZERO_TOKENS));
    if (candidates.length === 0) return undefined;
    const largest = candidates.reduce((a, b) => (b.prompt + b.completion > a.prompt + a.completion ? b : a));
    return toUsage(largest, this.#costUsd);
  }

  /** The answer, once a successful result arrived. */
  answer(): { value: unknown } | undefined {
    return this.#answer;
  }

  /** The report, once a successful result arrived. */
  report(): ClaudeReport | undefined {
    if (this.#answer === undefined) return undefined;
    const report: ClaudeReport = { answer: this.#answer.value, engine: 'claude' };
    if (this.#sessionId !== undefined) report.session_id = this.#sessionId;
    if (this.#numTurns !== undefined) report.num_turns = this.#numTurns;
    if (this.#costUsd !== undefined) report.cost_usd = this.#costUsd;
    if (this.mcpFailures.length > 0) report.notices = this.mcpFailures.map(mcpFailureText);
    return report;
  }
}

/** How a failed MCP server is named in a reason or a notice. */
export function mcpFailureText(name: string): string {
  return `MCP server ${name} failed to start`;
}

/** The result for a finished CLI run (reference §3.2 "Endings"). */
export function claudeEnding(stream: ClaudeStream, cli: CliEnding, schema?: unknown): ChildEnding {
  return cliEnding('claude', cli, {
    usage: stream.usage(),
    steps: stream.steps,
    failure: stream.failure,
    exhausted: stream.exhausted,
    report: () => stream.report(),
    notices: stream.mcpFailures.map(mcpFailureText),
    ...(schema === undefined ? {} : { schema }),
  });
}

export const claudeDialect: ShimDialect = {
  name: 'claude',
  async run(options, request, context) {
    // The request's own schema wins; `--schema FILE` is the deployment default.
    let schema: unknown = request.schema;
    if (schema === undefined && options.schema !== undefined) {
      try {
        schema = JSON.parse(await readFile(options.schema, 'utf8'));
      } catch (error) {
        return { status: 'failed', reason: `cannot read --schema ${options.schema}: ${textOf(error)}` };
      }
    }
    const schemaText = schema === undefined ? undefined : JSON.stringify(schema);
    const stream = new ClaudeStream();
    const maxSteps = request.max_steps;
    const cli = await runCli({
      command: options.command,
      args: claudeArgs(request, options, schemaText, await libosMcpAllowed(options)),
      env: await cliEnv(),
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      cancel: context.cancel,
      observe: (line) => {
        // Count first, then judge the ceiling: the over-limit step did happen and is reported.
        stream.observe(line);
        return maxSteps !== undefined && stream.steps > maxSteps ? 'stop' : 'continue';
      },
    });
    return claudeEnding(stream, cli, options.schemaCheck ? schema : undefined);
  },
};
