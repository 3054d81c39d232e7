import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CodexStream,
  codexArgs,
  codexEnding,
  codexMcpSettings,
  type ShimOptions,
  type ShimRequest,
} from '../src/index.js';
import { FAKE_CODEX, fileAppears, readJson, requestLine, runShimWith, scratch } from './helpers.js';

const NOTICE =
  'Configured service tier `priority` is not advertised as supported for model `gpt-5.3-codex-spark` and will be omitted from requests.';

// Lines recorded from codex-cli 0.151.0 (`exec --json`), trimmed to the fields that matter.
const RECORDED = [
  '{"type":"thread.started","thread_id":"t1"}',
  `{"type":"item.completed","item":{"id":"i0","type":"error","message":"${NOTICE}"}}`,
  '{"type":"turn.started"}',
  '{"type":"item.completed","item":{"id":"i2","type":"agent_message","text":"ok"}}',
  '{"type":"turn.completed","usage":{"input_tokens":13829,"cached_input_tokens":4608,"cache_write_input_tokens":0,"output_tokens":67,"reasoning_output_tokens":60}}',
];

const FIXTURE_USAGE = {
  prompt_tokens: 13829,
  completion_tokens: 67,
  total_tokens: 13896,
  prompt_cache_hit_tokens: 4608,
  prompt_cache_miss_tokens: 9221,
};

function observeAll(lines: string[]): CodexStream {
  const stream = new CodexStream();
  for (const line of lines) stream.observe(line);
  return stream;
}

describe('CodexStream', () => {
  it('notices are neither steps nor failures; the turn reports its usage, unpriced', () => {
    const stream = observeAll(RECORDED);
    expect(stream.steps).toBe(1);
    expect(stream.failure).toBeUndefined();
    expect(stream.usage()).toEqual(FIXTURE_USAGE);
    expect(stream.report(false)).toEqual({
      answer: 'ok',
      engine: 'codex',
      thread_id: 't1',
      notices: [NOTICE],
    });
  });

  it('commands and messages are steps, reasoning is not, the last message wins, turns add up', () => {
    const stream = observeAll([
      '{"type":"item.completed","item":{"id":"i1","type":"reasoning","text":"hmm"}}',
      '{"type":"item.completed","item":{"id":"i2","type":"command_execution","command":"ls","exit_code":0}}',
      '{"type":"item.completed","item":{"id":"i3","type":"agent_message","text":"draft"}}',
      '{"type":"item.completed","item":{"id":"i4","type":"agent_message","text":"forty-two"}}',
      '{"type":"item.completed","item":{"id":"i5","type":"error"}}',
      '{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":50,"output_tokens":1}}',
      '{"type":"turn.completed","usage":{"input_tokens":20,"output_tokens":2}}',
      '{"type":"turn.completed","usage":{"input_tokens":2.5,"output_tokens":2}}',
      'not json',
    ]);
    expect(stream.steps).toBe(3);
    expect(stream.report(false)).toEqual({ answer: 'forty-two', engine: 'codex' });
    // The hit is capped at the input: 10 cached of 10, then 0 of 20.
    expect(stream.usage()).toEqual({
      prompt_tokens: 30,
      completion_tokens: 3,
      total_tokens: 33,
      prompt_cache_hit_tokens: 10,
      prompt_cache_miss_tokens: 20,
    });
  });

  it('a structured answer is parsed; unparseable text stays text', () => {
    const structured = observeAll([
      '{"type":"item.completed","item":{"type":"agent_message","text":"{\\"verdict\\":\\"real\\"}"}}',
    ]);
    expect(structured.report(true)).toEqual({ answer: { verdict: 'real' }, engine: 'codex' });
    expect(structured.report(false)).toEqual({ answer: '{"verdict":"real"}', engine: 'codex' });
    const prose = observeAll([
      '{"type":"item.completed","item":{"type":"agent_message","text":"no json here"}}',
    ]);
    expect(prose.report(true)).toEqual({ answer: 'no json here', engine: 'codex' });
  });

  it('turn and stream errors are failures; the first one wins', () => {
    const stream = observeAll([
      '{"type":"turn.failed","error":{"message":"quota"}}',
      '{"type":"error","message":"later"}',
    ]);
    expect(stream.failure).toBe('codex: quota');
    expect(stream.report(false)).toBeUndefined();
    expect(stream.usage()).toBeUndefined();
  });
});

describe('CodexStream on 0.169 lines', () => {
  // Codex 0.169.0 against the scripted model (libs/agent-clis), refused with a 400.
  const body =
    '{\\"error\\":{\\"message\\":\\"invalid request: temperature out of range\\",\\"type\\":\\"invalid_request_error\\",\\"param\\":null,\\"code\\":\\"invalid_request_error\\"}}';
  it("an API error names the API's message, not its JSON body", () => {
    const stream = new CodexStream();
    stream.observe(`{"type":"error","message":"${body}"}`);
    stream.observe(`{"type":"turn.failed","error":{"message":"${body}"}}`);
    expect(stream.failure).toBe('codex: API error: invalid request: temperature out of range');
    expect(stream.steps).toBe(0);
  });
});

describe('CodexStream on 0.169 stderr', () => {
  // What Codex 0.169.0 printed on stderr (and nothing on stdout) when the required libos server
  // could not start (a malformed LIBOS_PID), before exiting 1.
  const STDERR = [
    '2026-12-03T18:48:51.776904Z ERROR codex_core::session: Failed to create session: required MCP servers failed to initialize: libos: handshaking with MCP server failed: connection closed: initialize response: connection closed: initialize response',
    'Error: thread/start: thread/start failed: error creating thread: Fatal error: Failed to initialize session: required MCP servers failed to initialize: libos: handshaking with MCP server failed: connection closed: initialize response: connection closed: initialize response (code -32603)',
  ];
  it('a required MCP server that failed to start is the failure, named', () => {
    const stream = new CodexStream();
    for (const line of ['WARNING: proceeding, even though we could not create PATH aliases', ...STDERR]) {
      stream.observeStderr(line);
    }
    const reason =
      'codex: MCP server failed to start: libos: handshaking with MCP server failed: connection closed: initialize response: connection closed: initialize response';
    expect(stream.failure).toBe(reason);
    expect(codexEnding(stream, { type: 'exited', code: 1 }, false)).toEqual({
      status: 'failed',
      reason,
      steps: 0,
    });
  });
});

describe('codexMcpSettings', () => {
  it('passes the libos variables by name, requires the server, approves its tools, waits long', () => {
    const settings = codexMcpSettings({
      command: '/usr/bin/node',
      args: ['/opt/mcp/bin.js'],
      tools: ['get_process'],
    });
    expect(settings).toEqual([
      'mcp_servers.libos.command="/usr/bin/node"',
      'mcp_servers.libos.args=["/opt/mcp/bin.js"]',
      'mcp_servers.libos.env_vars=["LIBOS_URL","LIBOS_PID","LIBOS_TOKEN"]',
      'mcp_servers.libos.required=true',
      'mcp_servers.libos.startup_timeout_sec=60',
      'mcp_servers.libos.tool_timeout_sec=86400',
      'mcp_servers.libos.default_tools_approval_mode="approve"',
      'mcp_servers.libos.enabled_tools=["get_process"]',
    ]);
  });
});

describe('codexArgs', () => {
  const request: ShimRequest = { request_id: 'r', kind: 'explore', input: null, prompt: 'why?' };
  const options: ShimOptions = {
    resultFile: '/r',
    command: 'codex',
    writable: false,
    schemaCheck: true,
    libosMcp: true,
    extra: [],
  };

  it('uses the read-only sandbox by default; model, schema path and extras before the prompt', () => {
    expect(codexArgs(request, { ...options, model: 'gpt-5', extra: ['--ephemeral'] }, 'out.json')).toEqual([
      'exec',
      '--json',
      '--skip-git-repo-check',
      '-s',
      'read-only',
      '-m',
      'gpt-5',
      '--output-schema',
      'out.json',
      '--ephemeral',
      'why?',
    ]);
  });

  it('uses workspace-write for a worker or with --writable', () => {
    const writable = ['exec', '--json', '--skip-git-repo-check', '-s', 'workspace-write', 'why?'];
    expect(codexArgs({ ...request, kind: 'worker' }, options)).toEqual(writable);
    expect(codexArgs(request, { ...options, writable: true })).toEqual(writable);
  });

  it('keeps a prompt that starts with a dash from being read as a flag', () => {
    expect(codexArgs({ ...request, prompt: '-v?' }, options).slice(-2)).toEqual(['--', '-v?']);
  });
});

describe('the codex shim against a fake Codex', () => {
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
      'codex',
      [
        '--result-file',
        resultFile,
        '--command',
        FAKE_CODEX,
        ...more,
        '--',
        ...through,
        '--scenario',
        scenario,
      ],
      { resultFile, line: requestLine(fields) },
    );

  it('completed: the last message, the thread, the notices, the fixture usage', async () => {
    const { code, result, stderr } = await run('success');
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(result).toEqual({
      version: 1,
      request_id: 'req-1',
      status: 'completed',
      output: { answer: 'ok', engine: 'codex', thread_id: 't1', notices: [NOTICE] },
      usage: FIXTURE_USAGE,
      steps: 3,
    });
  });

  it('a request schema goes to workflow-codex-schema-*/schema.json, removed afterwards; structured mode parses', async () => {
    const record = join(dir, 'argv.json');
    const schema = { type: 'object', properties: { verdict: { type: 'string' } } };
    const { result } = await run(
      'structured',
      { kind: 'worker', schema, input: 'a bare prompt' },
      ['--model', 'o4'],
      ['--record', record],
    );
    const recorded = await readJson(record);
    const argv = recorded.argv as string[];
    const schemaPath = argv[argv.indexOf('--output-schema') + 1] ?? '';
    expect(schemaPath).toMatch(/\/workflow-codex-schema-[^/]+\/schema\.json$/);
    expect(argv).toEqual([
      'exec',
      '--json',
      '--skip-git-repo-check',
      '-s',
      'workspace-write',
      '-m',
      'o4',
      '--output-schema',
      schemaPath,
      '--record',
      record,
      '--scenario',
      'structured',
      'a bare prompt',
    ]);
    expect(JSON.parse(String(recorded.schema))).toEqual(schema);
    expect(existsSync(schemaPath)).toBe(false);
    expect(result?.output).toEqual({ answer: { verdict: 'real' }, engine: 'codex' });
  });

  it('--schema FILE is passed through as the path when the request has none', async () => {
    const schemaFile = join(dir, 'schema.json');
    await writeFile(schemaFile, '{"type":"object"}');
    const record = join(dir, 'argv.json');
    const { result } = await run('structured', {}, ['--schema', schemaFile], ['--record', record]);
    const argv = (await readJson(record)).argv as string[];
    expect(argv[argv.indexOf('--output-schema') + 1]).toBe(schemaFile);
    expect(existsSync(schemaFile)).toBe(true);
    expect(result?.output).toEqual({ answer: { verdict: 'real' }, engine: 'codex' });
  });

  it('max_steps_exhausted by the ceiling, without usage (codex flushes none on SIGINT)', async () => {
    const { code, result } = await run('many-steps', { limits: { max_steps: 1 } });
    expect(code).toBe(0);
    expect(result).toEqual({ version: 1, request_id: 'req-1', status: 'max_steps_exhausted', steps: 2 });
  });

  it('without a ceiling the same run completes', async () => {
    const { result } = await run('many-steps');
    expect(result).toMatchObject({ status: 'completed', steps: 4, usage: FIXTURE_USAGE });
  });

  it('interrupted on stdin EOF, without usage', async () => {
    const ready = join(dir, 'ready');
    const { code, result } = await runShimWith(
      'codex',
      ['--result-file', resultFile, '--command', FAKE_CODEX, '--', '--scenario', 'hang', '--ready', ready],
      { resultFile, line: requestLine(), closeStdin: fileAppears(ready) },
    );
    expect(code).toBe(0);
    expect(result).toEqual({
      version: 1,
      request_id: 'req-1',
      status: 'interrupted',
      reason: 'the parent closed stdin',
      steps: 1,
    });
  });

  it('failed: turn.failed (first failure wins) and a top-level error beat a message', async () => {
    const failed = await run('turn-failed');
    expect(failed.result).toMatchObject({ status: 'failed', reason: 'codex: quota', steps: 1 });
    expect(failed.stderr).toBe('codex shim: codex: quota\n');
    const streamError = await run('stream-error');
    expect(streamError.result).toMatchObject({ status: 'failed', reason: 'codex: stream disconnected' });
  });

  it('completed: a message with a nonzero exit; failed: a nonzero exit without one', async () => {
    const partial = await run('message-nonzero');
    expect(partial.result).toMatchObject({
      status: 'completed',
      output: { answer: 'partial', engine: 'codex' },
    });
    const crash = await run('crash');
    expect(crash.result).toEqual({
      version: 1,
      request_id: 'req-1',
      status: 'failed',
      reason: 'codex exited 2 without a result',
      steps: 1,
    });
  });

  it('failed: a CLI that cannot be spawned; no_report: a clean exit without a message', async () => {
    const missing = await runShimWith(
      'codex',
      ['--result-file', resultFile, '--command', join(dir, 'no-codex')],
      {
        resultFile,
        line: requestLine(),
      },
    );
    expect(missing.result?.status).toBe('failed');
    expect(missing.result?.reason).toMatch(/^cannot spawn .*no-codex: .*ENOENT/);
    const silent = await run('silent');
    expect(silent.result).toEqual({ version: 1, request_id: 'req-1', status: 'no_report', steps: 0 });
  });
});
