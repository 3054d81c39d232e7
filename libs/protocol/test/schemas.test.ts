import { describe, expect, it } from 'vitest';
import {
  completionFromRunResult,
  createRootArgsSchema,
  errorEnvelope,
  errorEnvelopeSchema,
  HTTP_STATUS_BY_CODE,
  imageSpecSchema,
  launchJobId,
  launchQueueName,
  launchQueueNames,
  launchQueueOf,
  noticeFor,
  OID_PATTERN,
  outcomeTypeOfTerminal,
  PID_PATTERN,
  poolOfQueue,
  rootOf,
  shardOf,
  TOOL_NAMES,
  TOOLS,
} from '../src/index.js';

describe('TOOLS', () => {
  it('names every tool of the public surface', () => {
    expect(TOOL_NAMES.sort()).toEqual(
      [
        'create_object',
        'fork_child_process',
        'get_process',
        'list_child_processes',
        'merge_child_memory',
        'process_exit',
        'read_object',
        'read_process_messages',
        'receive_process_messages',
        'send_process_message',
        'signal_child_process',
        'spawn_child_process',
        'spawn_children',
        'wait_child_process',
        'wait_children',
        'write_object',
      ].sort(),
    );
  });

  it('gives the batch tools their defaults and bounds', () => {
    expect(TOOLS.wait_children.args.parse({ child_pids: ['pabcde.1'] })).toEqual({
      child_pids: ['pabcde.1'],
      mode: 'any',
      block: true,
    });
    expect(TOOLS.wait_children.args.safeParse({ child_pids: [] }).success).toBe(false);
    expect(TOOLS.wait_children.args.safeParse({ child_pids: ['pabcde.1'], mode: 'some' }).success).toBe(
      false,
    );
    expect(TOOLS.spawn_children.args.safeParse({ children: [] }).success).toBe(false);
    expect(TOOLS.spawn_children.args.safeParse({ children: [{ goal: 'g', extra: 1 }] }).success).toBe(false);
    expect(TOOLS.spawn_children.args.parse({ children: [{ goal: 'g', input: { n: 1 } }] })).toEqual({
      children: [{ goal: 'g', input: { n: 1 } }],
    });
  });

  it('applies the documented defaults', () => {
    const pid = 'pabcde.1';
    expect(TOOLS.fork_child_process.args.parse({ goal: 'g' })).toEqual({
      goal: 'g',
      include_parent_roots: true,
      mode: 'worker',
    });
    expect(TOOLS.list_child_processes.args.parse({})).toEqual({ include_terminal: true });
    expect(TOOLS.wait_child_process.args.parse({ child_pid: pid })).toEqual({ child_pid: pid, block: true });
    expect(TOOLS.merge_child_memory.args.parse({ child_pid: pid })).toEqual({
      child_pid: pid,
      include_child_created: false,
    });
    expect(TOOLS.send_process_message.args.parse({ to: 'parent' })).toEqual({ to: 'parent', kind: 'normal' });
    expect(TOOLS.read_process_messages.args.parse({})).toEqual({
      include_acked: false,
      ack: true,
      limit: 20,
    });
    expect(TOOLS.receive_process_messages.args.parse({})).toEqual({
      include_acked: false,
      ack: true,
      limit: 20,
      block: true,
    });
    expect(TOOLS.process_exit.args.parse({})).toEqual({ failed: false });
    expect(TOOLS.create_object.args.parse({ payload: null })).toEqual({ payload: null, root: true });
  });

  it('rejects unknown fields and malformed values', () => {
    expect(TOOLS.spawn_child_process.args.safeParse({ goal: 'g', extra: 1 }).success).toBe(false);
    expect(TOOLS.spawn_child_process.args.safeParse({ goal: '' }).success).toBe(false);
    expect(
      TOOLS.spawn_child_process.args.safeParse({
        goal: 'g',
        inherit_capabilities: [{ resource: 'x', rights: [] }],
      }).success,
    ).toBe(false);
    expect(TOOLS.wait_child_process.args.safeParse({ child_pid: 'not a pid' }).success).toBe(false);
    expect(TOOLS.send_process_message.args.safeParse({ to: 'sibling' }).success).toBe(false);
    expect(TOOLS.read_process_messages.args.safeParse({ limit: -1 }).success).toBe(false);
  });

  it('accepts inherited paths as strings or objects', () => {
    const parsed = TOOLS.spawn_child_process.args.parse({
      goal: 'g',
      inherited_paths: ['a', { path: 'b', kind: 'dir' }],
    });
    expect(parsed.inherited_paths).toEqual(['a', { path: 'b', kind: 'dir', access: 'read' }]);
  });
});

describe('errors', () => {
  it('maps the codes of docs/api.md to their HTTP statuses', () => {
    expect(HTTP_STATUS_BY_CODE).toEqual({
      invalid_argument: 400,
      unauthenticated: 401,
      permission_denied: 403,
      not_found: 404,
      failed_precondition: 409,
      payload_too_large: 413,
      resource_exhausted: 429,
      unavailable: 503,
      internal: 500,
    });
  });

  it('builds and validates the envelope with a reason', () => {
    const envelope = errorEnvelope('permission_denied', 'no', {
      reason: 'not_delegable',
      resource: 'net:api',
    });
    expect(errorEnvelopeSchema.parse(envelope)).toEqual(envelope);
    expect(errorEnvelopeSchema.safeParse({ error: { code: 'nope', message: 'x' } }).success).toBe(false);
    expect(
      errorEnvelopeSchema.safeParse({
        error: { code: 'internal', message: 'x', details: { reason: 'made_up' } },
      }).success,
    ).toBe(false);
  });
});

describe('admin bodies', () => {
  it('requires an image to name {result_file} and fills its defaults', () => {
    expect(imageSpecSchema.safeParse({ command: 'node', args: ['x.js'] }).success).toBe(false);
    expect(imageSpecSchema.parse({ command: 'node', args: ['x.js', '--out={result_file}'] })).toMatchObject({
      pool: 'default',
      required_capabilities: [],
      skills: [],
    });
  });

  it('defaults a root to be driven by its caller', () => {
    expect(createRootArgsSchema.parse({ goal: 'g' })).toEqual({ goal: 'g', launch: false });
  });
});

describe('completions', () => {
  it('maps contract terminals to outcome types', () => {
    expect(outcomeTypeOfTerminal('captured')).toBe('completed');
    expect(outcomeTypeOfTerminal('max_steps')).toBe('max_steps_exhausted');
    expect(outcomeTypeOfTerminal('timed_out')).toBe('timed_out');
  });

  it('builds a completion from a contract run result', () => {
    expect(
      completionFromRunResult(
        {
          terminal: { type: 'captured' },
          report: { ok: 1 },
          stepsUsed: 3,
          promptTokens: 10,
          completionTokens: 4,
          costUsd: 0.5,
          exitCode: 0,
        },
        1234.4,
      ),
    ).toEqual({
      terminal: { type: 'captured' },
      report: { ok: 1 },
      usage: { prompt_tokens: 10, completion_tokens: 4, cost_usd: 0.5, steps: 3, wall_ms: 1234 },
      exit_code: 0,
    });
    const failed = completionFromRunResult(
      {
        terminal: { type: 'failed', reason: 'the child exited 1 without writing a result' },
        stepsUsed: 0,
        promptTokens: 0,
        completionTokens: 0,
        unaccounted: 'the child left no result',
      },
      10,
    );
    expect(failed).not.toHaveProperty('report');
    expect(failed.unaccounted).toBe('the child left no result');
    const yielded = completionFromRunResult(
      {
        terminal: { type: 'context_yield' },
        yieldReason: 'context ceiling',
        stepsUsed: 1,
        promptTokens: 0,
        completionTokens: 0,
      },
      10,
    );
    expect(yielded.terminal).toEqual({ type: 'context_yield', reason: 'context ceiling' });
  });
});

describe('ids and notices', () => {
  it('parses pids, oids and their tree', () => {
    expect(PID_PATTERN.test('p4k9x2m7q')).toBe(true);
    expect(PID_PATTERN.test('p4k9x2m7q.12')).toBe(true);
    expect(PID_PATTERN.test('p4k9x2m7q.0')).toBe(false);
    expect(OID_PATTERN.test('p4k9x2m7q/o3')).toBe(true);
    expect(rootOf('p4k9x2m7q.12')).toBe('p4k9x2m7q');
    expect(rootOf('p4k9x2m7q/m5')).toBe('p4k9x2m7q');
  });

  it('exposes message ids only', () => {
    expect(noticeFor('interrupt', [])).toBeUndefined();
    expect(noticeFor('interrupt', ['pabcde/m1'])).toMatchObject({
      kind: 'interrupt',
      message_ids: ['pabcde/m1'],
    });
  });
});

describe('launch queues', () => {
  it('names jobs without ":" (BullMQ refuses it in custom ids) and queues per pool', () => {
    expect(launchJobId('p4k9x2m7q.3', 2)).toBe('p4k9x2m7q.3-a2');
    expect(launchJobId('p4k9x2m7q.3', 2)).not.toContain(':');
    expect(launchQueueName('gpu')).toBe('{launch-gpu}');
    expect(launchQueueNames('gpu', 3)).toEqual(['{launch-gpu@0}', '{launch-gpu@1}', '{launch-gpu@2}']);
    expect(launchQueueNames('gpu', 1)).toEqual(['{launch-gpu}']);
    expect(launchQueueOf('gpu', 'p4k9x2m7q.3', 1)).toBe('{launch-gpu}');
    for (const name of ['{launch-gpu}', '{launch-gpu@2}', 'launch-gpu'])
      expect(poolOfQueue(name)).toBe('gpu');
  });

  it("puts a process in its tree root's shard, the hash the kernel shards its indexes by", () => {
    const root = 'p4k9x2m7q';
    // FNV-1a of the root, fixed: changing it would move queued launches (and index records).
    expect(shardOf(root, 2 ** 32 - 1)).toBe(2_284_188_886);
    expect(shardOf('', 2 ** 32 - 1)).toBe(0x811c9dc5 % (2 ** 32 - 1));
    expect(shardOf('a', 2 ** 32 - 1)).toBe(0xe40c292c % (2 ** 32 - 1));
    expect(launchQueueOf('gpu', `${root}.3.1`, 3)).toBe(launchQueueOf('gpu', root, 3));
    expect(launchQueueOf('gpu', root, 3)).toBe(`{launch-gpu@${shardOf(root, 3)}}`);
  });

  it('spreads trees evenly over the shards', () => {
    const shards = 3;
    const counts = new Map<number, number>();
    for (let i = 0; i < 3_000; i++) {
      const shard = shardOf(`p${(i * 7919).toString(36).padStart(8, 'x')}`, shards);
      counts.set(shard, (counts.get(shard) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual([0, 1, 2]);
    // 1,000 expected each: a bad spread (a constant, a bias) is far outside this.
    for (const count of counts.values()) expect(count).toBeGreaterThan(850);
    for (const count of counts.values()) expect(count).toBeLessThan(1_150);
  });
});
