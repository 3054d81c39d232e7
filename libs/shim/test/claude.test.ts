import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ClaudeStream, claudeArgs, claudeEnding, type ShimOptions, type ShimRequest } from '../src/index.js';
import { FAKE_CLAUDE, fileAppears, readJson, requestLine, runShimWith, scratch } from './helpers.js';

// Lines recorded from claude 2.1.258 (`--output-format stream-json --verbose`, Haiku 4.5), trimmed
// to the fields that matter. Both `assistant` lines are the same message (thinking, then text).
const RECORDED = [
  '{"type":"system","subtype":"init","session_id":"s1","uuid":"u0"}',
  '{"type":"rate_limit_event","uuid":"u1"}',
  '{"type":"system","subtype":"thinking_tokens","uuid":"u2"}',
  '{"type":"assistant","message":{"id":"msg_1","content":[{"type":"thinking"}],"usage":{"input_tokens":10,"cache_creation_input_tokens":7669,"cache_read_input_tokens":13615,"output_tokens":4}},"uuid":"u3"}',
  '{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"cache_creation_input_tokens":7669,"cache_read_input_tokens":13615,"output_tokens":4}},"uuid":"u4"}',
  '{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s1","num_turns":1,"total_cost_usd":0.0173444,"usage":{"input_tokens":10,"cache_creation_input_tokens":7669,"cache_read_input_tokens":13615,"output_tokens":43,"output_tokens_details":{"thinking_tokens":37}}}',
];

const FIXTURE_USAGE = {
  prompt_tokens: 21294,
  completion_tokens: 43,
  total_tokens: 21337,
  prompt_cache_hit_tokens: 13615,
  prompt_cache_miss_tokens: 7679,
  cost_usd: 0.0173444,
};

function observeAll(lines: string[]): ClaudeStream {
  const stream = new ClaudeStream();
  for (const line of lines) stream.observe(line);
  return stream;
}

describe('ClaudeStream', () => {
  it('one message across two content blocks is one step; the result charges once, priced', () => {
    const stream = observeAll(RECORDED);
    expect(stream.steps).toBe(1);
    expect(stream.usage()).toEqual(FIXTURE_USAGE);
    expect(stream.report()).toEqual({
      answer: 'ok',
      engine: 'claude',
      session_id: 's1',
      num_turns: 1,
      cost_usd: 0.0173444,
    });
  });

  it('a run cut short sums the last snapshot of every message, unpriced', () => {
    const stream = observeAll([
      '{"type":"assistant","message":{"id":"msg_1","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":2}}}',
      '{"type":"assistant","message":{"id":"msg_1","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":5}}}',
      '{"type":"assistant","message":{"id":"msg_2","usage":{"input_tokens":3,"output_tokens":7}}}',
    ]);
    expect(stream.steps).toBe(2);
    expect(stream.usage()).toEqual({
      prompt_tokens: 103,
      completion_tokens: 12,
      total_tokens: 115,
      prompt_cache_hit_tokens: 90,
      prompt_cache_miss_tokens: 13,
    });
    expect(stream.report()).toBeUndefined();
  });

  it('ignores blank and non-JSON lines; a line without usage keeps the last snapshot; id-less messages are steps', () => {
    const stream = observeAll(['', '\r', 'not json', '[1,2]', '{"type":"assistant","message":{"id":"m"}}']);
    expect(stream.steps).toBe(1);
    expect(stream.usage()).toEqual({
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
      prompt_cache_hit_tokens: 0,
      prompt_cache_miss_tokens: 0,
    });
    stream.observe('{"type":"assistant","message":{"id":"m","usage":{"input_tokens":3,"output_tokens":2}}}');
    stream.observe(
      '{"type":"assistant","message":{"id":"m","usage":{"input_tokens":1.5,"output_tokens":2}}}',
    );
    stream.observe('{"type":"assistant","message":{"id":"m"}}');
    expect(stream.steps).toBe(1);
    expect(stream.usage()?.prompt_tokens).toBe(3);
    stream.observe('{"type":"assistant","message":{"content":[]}}');
    stream.observe('{"type":"assistant","message":{"content":[]}}');
    expect(stream.steps).toBe(3);
    expect(new ClaudeStream().usage()).toBeUndefined();
  });

  it('error results fail with the subtype and text; error_max_turns is exhaustion', () => {
    const failed = observeAll([
      '{"type":"result","subtype":"error_during_execution","is_error":true,"result":"boom"}',
    ]);
    expect(failed.failure).toBe('claude: error_during_execution: boom');
    expect(failed.report()).toBeUndefined();
    const bare = observeAll(['{"type":"result","subtype":"success","is_error":true}']);
    expect(bare.failure).toBe('claude: success');
    const capped = observeAll(['{"type":"result","subtype":"error_max_turns","is_error":true}']);
    expect(capped.exhausted).toBe(true);
    expect(capped.failure).toBeUndefined();
  });

  it('a structured answer replaces the text; null structured output does not', () => {
    const structured = observeAll([
      '{"type":"result","subtype":"success","result":"","structured_output":{"verdict":"real"}}',
    ]);
    expect(structured.report()).toEqual({ answer: { verdict: 'real' }, engine: 'claude' });
    const plain = observeAll(['{"type":"result","result":"你好🌙","structured_output":null}']);
    expect(plain.report()).toEqual({ answer: '你好🌙', engine: 'claude' });
    expect(observeAll(['{"type":"result"}']).report()).toEqual({ answer: '', engine: 'claude' });
  });
});

// Lines Claude Code 2.1.328 printed against the scripted model (libs/agent-clis), trimmed to the
// fields that matter.
const CANCELLED_MID_REPLY = [
  '{"type":"assistant","message":{"id":"msg_1_d48a7899","model":"claude-opus-5-5","usage":{"input_tokens":1234,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}},"aborted":true}',
  '{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}',
  '{"type":"result","subtype":"error_during_execution","is_error":true,"total_cost_usd":0.004956,"usage":{"output_tokens_details":{"thinking_tokens":0},"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0,"service_tier":"standard"},"modelUsage":{"claude-opus-5-5":{"inputTokens":1234,"outputTokens":56,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"webSearchRequests":0,"costUSD":0.004956,"contextWindow":1000000}},"num_turns":2,"terminal_reason":"aborted_streaming","session_id":"3a3980a6"}',
];
const API_ERROR = [
  '{"type":"assistant","message":{"id":"e05011e8-29be-4d9e-8f90-9a948343de09","model":"<synthetic>","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"API Error: 400 invalid request: temperature out of range"}]},"error":"unknown","is_api_error_message":true,"api_error_status":400}',
  '{"type":"result","subtype":"success","is_error":true,"result":"API Error: 400 invalid request: temperature out of range","api_error_status":400,"total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"modelUsage":{},"num_turns":1,"terminal_reason":"api_error"}',
];
const MCP_FAILED_INIT =
  '{"type":"system","subtype":"init","session_id":"s1","tools":["Read"],"mcp_servers":[{"name":"libos","status":"failed","source":"dynamic"}],"model":"claude-opus-5-5"}';

describe('ClaudeStream on 2.1.328 lines', () => {
  it('cancelled mid-reply: the all-zero result usage loses to modelUsage, priced by the result', () => {
    const stream = observeAll(CANCELLED_MID_REPLY);
    expect(stream.steps).toBe(1);
    expect(stream.usage()).toEqual({
      prompt_tokens: 1234,
      completion_tokens: 56,
      total_tokens: 1290,
      prompt_cache_hit_tokens: 0,
      prompt_cache_miss_tokens: 1234,
      cost_usd: 0.004956,
    });
  });

  it('the larger of the result totals and the message snapshots counts', () => {
    const stream = observeAll([
      '{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":500,"output_tokens":9}}}',
      '{"type":"result","subtype":"error_during_execution","is_error":true,"usage":{"input_tokens":0,"output_tokens":0}}',
    ]);
    expect(stream.usage()?.prompt_tokens).toBe(500);
  });

  it('an API error: named as one, with its status; the synthetic message is no step', () => {
    const stream = observeAll(API_ERROR);
    expect(stream.steps).toBe(0);
    expect(stream.failure).toBe('claude: API error 400: invalid request: temperature out of range');
    expect(claudeEnding(stream, { type: 'exited', code: 1 })).toMatchObject({ status: 'failed', steps: 0 });
  });

  it("an MCP server that failed at init: a notice on the report, and in a failure's reason", () => {
    const done = observeAll([MCP_FAILED_INIT, ...RECORDED.slice(1)]);
    expect(done.mcpFailures).toEqual(['libos']);
    expect(done.report()?.notices).toEqual(['MCP server libos failed to start']);
    const failed = observeAll([MCP_FAILED_INIT, ...API_ERROR]);
    expect(claudeEnding(failed, { type: 'exited', code: 1 })).toMatchObject({
      status: 'failed',
      reason:
        'claude: API error 400: invalid request: temperature out of range (MCP server libos failed to start)',
    });
    expect(claudeEnding(observeAll([MCP_FAILED_INIT]), { type: 'exited', code: 0 })).toMatchObject({
      status: 'failed',
      reason: 'claude ended without a result (MCP server libos failed to start)',
    });
  });

  it('an answer that does not satisfy the schema fails with the validator path; --no-schema-check keeps it', () => {
    const schema = { type: 'object', properties: { score: { type: 'integer' } }, required: ['score'] };
    const stream = observeAll([
      '{"type":"result","subtype":"success","result":"","structured_output":{"score":"high"}}',
    ]);
    expect(claudeEnding(stream, { type: 'exited', code: 0 }, schema)).toMatchObject({
      status: 'failed',
      reason: 'the answer does not satisfy the schema: $.score: must be integer',
    });
    expect(claudeEnding(stream, { type: 'exited', code: 0 })).toMatchObject({ status: 'completed' });
  });
});

describe('claudeArgs', () => {
  const request: ShimRequest = { request_id: 'r', kind: 'explore', input: null, prompt: 'why?' };
  const options: ShimOptions = {
    resultFile: '/r',
    command: 'claude',
    writable: false,
    schemaCheck: true,
    libosMcp: true,
    extra: [],
  };
  const tools = ['Edit', 'Write', 'MultiEdit', 'NotebookEdit', 'Bash'];

  it('is read-only by default, with the model, the schema and extras before the tool list; the prompt last, after --', () => {
    expect(
      claudeArgs(request, { ...options, model: 'opus', extra: ['--max-budget-usd', '1'] }, '{}'),
    ).toEqual([
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--model',
      'opus',
      '--json-schema',
      '{}',
      '--max-budget-usd',
      '1',
      '--disallowedTools',
      ...tools,
      '--',
      'why?',
    ]);
  });

  it('accepts edits for a worker or with --writable', () => {
    const writable = ['-p', '--output-format', 'stream-json', '--verbose'];
    writable.push('--permission-mode', 'acceptEdits', '--allowedTools', ...tools, '--', 'why?');
    expect(claudeArgs({ ...request, kind: 'worker' }, options)).toEqual(writable);
    expect(claudeArgs(request, { ...options, writable: true })).toEqual(writable);
  });

  it('a prompt that starts with - stays the prompt (the real CLI read it as an option before)', () => {
    expect(claudeArgs({ ...request, prompt: '- a bullet question' }, options).slice(-2)).toEqual([
      '--',
      '- a bullet question',
    ]);
  });

  it('wires the libos MCP server and allows its tools, all or the ones named', () => {
    const libos = { command: '/usr/bin/node', args: ['/opt/libos/mcp/bin.js'] };
    const args = claudeArgs(request, options, undefined, libos);
    const config = JSON.parse(args[args.indexOf('--mcp-config') + 1] ?? '');
    expect(config).toEqual({
      mcpServers: { libos: { type: 'stdio', command: '/usr/bin/node', args: ['/opt/libos/mcp/bin.js'] } },
    });
    expect(JSON.stringify(config)).not.toContain('LIBOS_TOKEN');
    expect(args.slice(args.indexOf('--allowedTools'))).toEqual([
      '--allowedTools',
      'mcp__libos',
      '--disallowedTools',
      ...tools,
      '--',
      'why?',
    ]);
    const narrow = claudeArgs(request, options, undefined, {
      ...libos,
      tools: ['spawn_child_process', 'wait_child_process'],
    });
    expect(narrow).toContain('mcp__libos__spawn_child_process');
    expect(narrow).toContain('mcp__libos__wait_child_process');
    expect(narrow).not.toContain('mcp__libos');
    const worker = claudeArgs({ ...request, kind: 'worker' }, options, undefined, libos);
    expect(worker.slice(worker.indexOf('--allowedTools'), -2)).toEqual([
      '--allowedTools',
      ...tools,
      'mcp__libos',
    ]);
  });
});

describe('the claude shim against a fake Claude Code', () => {
  let dir = '';
  let cleanup = async () => {};
  let resultFile = '';
  beforeEach(async () => {
    ({ dir, cleanup } = await scratch());
    resultFile = join(dir, 'result.json');
  });
  afterEach(() => cleanup());

  const run = (
    scenario: string,
    fields: Record<string, unknown> = {},
    more: string[] = [],
    through: string[] = [],
  ) =>
    runShimWith(
      'claude',
      [
        '--result-file',
        resultFile,
        '--command',
        FAKE_CLAUDE,
        ...more,
        '--',
        ...through,
        '--scenario',
        scenario,
      ],
      { resultFile, line: requestLine(fields) },
    );

  it('completed: the report, the fixture usage with its price, and the steps, in key order', async () => {
    const { code, result, stderr } = await run('success');
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(result).toEqual({
      version: 1,
      request_id: 'req-1',
      status: 'completed',
      output: { answer: 'ok', engine: 'claude', session_id: 's1', num_turns: 1, cost_usd: 0.0173444 },
      usage: FIXTURE_USAGE,
      steps: 1,
    });
    expect(Object.keys(result ?? {})).toEqual([
      'version',
      'request_id',
      'status',
      'output',
      'usage',
      'steps',
    ]);
  });

  it('builds the argv from the request: prompt with hints, schema inline, worker tool policy', async () => {
    const record = join(dir, 'argv.json');
    const schema = { type: 'object', properties: { verdict: { type: 'string' } } };
    await run(
      'success',
      { kind: 'worker', input: { query: 'q', hints: 'h' }, schema },
      ['--model', 'haiku'],
      ['--record', record],
    );
    const { argv } = await readJson(record);
    expect(argv).toEqual([
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--model',
      'haiku',
      '--json-schema',
      JSON.stringify(schema),
      '--record',
      record,
      '--scenario',
      'success',
      '--permission-mode',
      'acceptEdits',
      '--allowedTools',
      'Edit',
      'Write',
      'MultiEdit',
      'NotebookEdit',
      'Bash',
      '--',
      'q\n\nHints: h',
    ]);
  });

  it('reads a --schema file when the request has none; the request schema wins', async () => {
    const schemaFile = join(dir, 'schema.json');
    await writeFile(schemaFile, '{"type":"string"}');
    const record = join(dir, 'argv.json');
    const argvOf = async (fields: Record<string, unknown>) => {
      await run('success', fields, ['--schema', schemaFile], ['--record', record]);
      const { argv } = await readJson(record);
      return argv as string[];
    };
    const fromFile = await argvOf({});
    expect(fromFile[fromFile.indexOf('--json-schema') + 1]).toBe('{"type":"string"}');
    const fromRequest = await argvOf({ schema: { type: 'object' } });
    expect(fromRequest[fromRequest.indexOf('--json-schema') + 1]).toBe('{"type":"object"}');
  });

  it('an unreadable --schema file is a failed result', async () => {
    const missing = join(dir, 'missing.json');
    const { code, result, stderr } = await run('success', {}, ['--schema', missing]);
    expect(code).toBe(0);
    expect(result?.status).toBe('failed');
    expect(result?.reason).toMatch(new RegExp(`^cannot read --schema ${missing}: ENOENT`));
    expect(stderr).toContain(`claude shim: cannot read --schema ${missing}`);
  });

  it('a structured answer is the report; a success with a nonzero exit still completes', async () => {
    const structured = await run('structured', { schema: { type: 'object' } });
    expect(structured.result?.output).toEqual({
      answer: { verdict: 'real' },
      engine: 'claude',
      session_id: 's1',
      num_turns: 1,
      cost_usd: 0.0173444,
    });
    const nonzero = await run('nonzero-success');
    expect(nonzero.result?.status).toBe('completed');
  });

  it('max_steps_exhausted by the ceiling: the over-limit step counts, the snapshots are the usage', async () => {
    const { code, result } = await run('many-steps', { limits: { max_steps: 2 } });
    expect(code).toBe(0);
    expect(result).toEqual({
      version: 1,
      request_id: 'req-1',
      status: 'max_steps_exhausted',
      usage: {
        prompt_tokens: 60,
        completion_tokens: 9,
        total_tokens: 69,
        prompt_cache_hit_tokens: 0,
        prompt_cache_miss_tokens: 60,
      },
      steps: 3,
    });
  });

  it('without a ceiling the same run completes with every step', async () => {
    const { result } = await run('many-steps');
    expect(result?.status).toBe('completed');
    expect(result?.steps).toBe(5);
  });

  it('max_steps_exhausted by error_max_turns', async () => {
    const { result } = await run('max-turns');
    expect(result?.status).toBe('max_steps_exhausted');
    expect(result?.steps).toBe(2);
    expect(result?.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 2 });
  });

  it('interrupted on stdin EOF, with the usage the CLI flushed after SIGINT', async () => {
    const ready = join(dir, 'ready');
    const { code, result, stderr } = await runShimWith(
      'claude',
      [
        '--result-file',
        resultFile,
        '--command',
        FAKE_CLAUDE,
        '--',
        '--scenario',
        'late-usage',
        '--ready',
        ready,
      ],
      { resultFile, line: requestLine(), closeStdin: fileAppears(ready) },
    );
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(result).toEqual({
      version: 1,
      request_id: 'req-1',
      status: 'interrupted',
      reason: 'the parent closed stdin',
      usage: FIXTURE_USAGE,
      steps: 1,
    });
  });

  it('failed: an error result, with its usage so far', async () => {
    const { code, result, stderr } = await run('error');
    expect(code).toBe(0);
    expect(result).toMatchObject({
      status: 'failed',
      reason: 'claude: error_during_execution: boom',
      steps: 1,
    });
    expect(result?.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 1 });
    expect(stderr).toBe('claude shim: claude: error_during_execution: boom\n');
  });

  it('failed: a nonzero exit without a result', async () => {
    const { result } = await run('crash');
    expect(result).toMatchObject({ status: 'failed', reason: 'claude exited 3 without a result', steps: 1 });
    expect(result?.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 3 });
  });

  it('failed: a CLI that cannot be spawned', async () => {
    const { code, result } = await runShimWith(
      'claude',
      ['--result-file', resultFile, '--command', join(dir, 'no-such-claude')],
      { resultFile, line: requestLine() },
    );
    expect(code).toBe(0);
    expect(result?.status).toBe('failed');
    expect(result?.reason).toMatch(/^cannot spawn .*no-such-claude: .*ENOENT/);
    expect(result?.steps).toBe(0);
    expect(result).not.toHaveProperty('usage');
  });

  it('no_report: a clean exit without a result, and no usage rather than a zero one', async () => {
    const { result } = await run('silent');
    expect(result).toEqual({ version: 1, request_id: 'req-1', status: 'no_report', steps: 0 });
  });
});
