import { readFile } from 'node:fs/promises';
import type { ChildEnding, Usage } from '@libos/contract';
import { z } from 'zod';
import { cliEnding } from '../ending.js';
import type { ShimOptions } from '../options.js';
import type { ShimRequest } from '../request.js';
import { type CliEnding, runCli } from '../run-cli.js';
import type { ShimDialect } from '../serve.js';
import { parseJsonLine, textOf } from '../text.js';
import { addTokens, type Tokens, toUsage, ZERO_TOKENS } from '../tokens.js';

// Claude Code (`claude -p --output-format stream-json --verbose`, recorded against 2.1.258) as a
// contract child. The stream has one `assistant` line per content block of a message (thinking,
// text, tool_use), each with that message's running usage; the final `result` carries the run's
// true totals. So a step is a distinct message id, and the cost is charged once, from the result.

const MUTATING_TOOLS = ['Edit', 'Write', 'MultiEdit', 'NotebookEdit', 'Bash'];

/** The CLI argv: the prompt first, the variadic tool list last so it swallows nothing. */
export function claudeArgs(request: ShimRequest, options: ShimOptions, schemaText?: string): string[] {
  const args = ['-p', request.prompt, '--output-format', 'stream-json', '--verbose'];
  if (options.model !== undefined) args.push('--model', options.model);
  if (schemaText !== undefined) args.push('--json-schema', schemaText);
  args.push(...options.extra);
  if (options.writable || request.kind === 'worker') {
    args.push('--permission-mode', 'acceptEdits', '--allowedTools', ...MUTATING_TOOLS);
  } else {
    args.push('--disallowedTools', ...MUTATING_TOOLS);
  }
  return args;
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
  message: z.object({
    id: z.string().optional().catch(undefined),
    usage: optionalUsage,
  }),
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
}

/** What the shim has learned from the stream so far. Unknown lines and fields are ignored. */
export class ClaudeStream {
  steps = 0;
  failure: string | undefined;
  exhausted = false;
  readonly #snapshots = new Map<string, Tokens>();
  #resultTokens: Tokens | undefined;
  #answer: { value: unknown } | undefined;
  #sessionId: string | undefined;
  #numTurns: number | undefined;
  #costUsd: number | undefined;

  observe(line: string): void {
    const json = parseJsonLine(line);
    if (json === undefined) return;
    const assistant = assistantLine.safeParse(json);
    if (assistant.success) {
      this.#message(assistant.data.message);
      return;
    }
    const result = resultLine.safeParse(json);
    if (result.success) this.#result(result.data);
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
    if (result.subtype === 'error_max_turns') {
      this.exhausted = true;
    } else if (result.is_error || result.subtype !== 'success') {
      this.failure =
        result.result === '' ? `claude: ${result.subtype}` : `claude: ${result.subtype}: ${result.result}`;
    } else {
      const structured = result.structured_output;
      this.#answer = { value: structured !== undefined && structured !== null ? structured : result.result };
    }
  }

  /**
   * The run's usage: the result's totals (priced) when it arrived; otherwise, for a run cut short,
   * the sum of the last snapshot of every message seen (unpriced); nothing when nothing was seen.
   */
  usage(): Usage | undefined {
    if (this.#resultTokens !== undefined) return toUsage(this.#resultTokens, this.#costUsd);
    if (this.#snapshots.size === 0) return undefined;
    return toUsage([...this.#snapshots.values()].reduce(addTokens, ZERO_TOKENS));
  }

  /** The report, once a successful result arrived. */
  report(): ClaudeReport | undefined {
    if (this.#answer === undefined) return undefined;
    const report: ClaudeReport = { answer: this.#answer.value, engine: 'claude' };
    if (this.#sessionId !== undefined) report.session_id = this.#sessionId;
    if (this.#numTurns !== undefined) report.num_turns = this.#numTurns;
    if (this.#costUsd !== undefined) report.cost_usd = this.#costUsd;
    return report;
  }
}

/** The result for a finished CLI run (reference §3.2 "Endings"). */
export function claudeEnding(stream: ClaudeStream, cli: CliEnding): ChildEnding {
  return cliEnding('claude', cli, {
    usage: stream.usage(),
    steps: stream.steps,
    failure: stream.failure,
    exhausted: stream.exhausted,
    report: () => stream.report(),
  });
}

export const claudeDialect: ShimDialect = {
  name: 'claude',
  async run(options, request, context) {
    // The request's own schema wins; `--schema FILE` is the deployment default.
    let schemaText: string | undefined;
    if (request.schema !== undefined) schemaText = JSON.stringify(request.schema);
    else if (options.schema !== undefined) {
      try {
        schemaText = await readFile(options.schema, 'utf8');
      } catch (error) {
        return { status: 'failed', reason: `cannot read --schema ${options.schema}: ${textOf(error)}` };
      }
    }
    const stream = new ClaudeStream();
    const maxSteps = request.max_steps;
    const cli = await runCli({
      command: options.command,
      args: claudeArgs(request, options, schemaText),
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      cancel: context.cancel,
      observe: (line) => {
        // Count first, then judge the ceiling: the over-limit step did happen and is reported.
        stream.observe(line);
        return maxSteps !== undefined && stream.steps > maxSteps ? 'stop' : 'continue';
      },
    });
    return claudeEnding(stream, cli);
  },
};
