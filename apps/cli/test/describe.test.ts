import type { DescribeResult, ProcessView } from '@libos/protocol';
import { describe, expect, it } from 'vitest';
import { describeText } from '../src/commands/describe.js';
import { ago, processTable } from '../src/commands/ps.js';

const NOW = Date.parse('2026-01-01T12:00:00.000Z');
const at = (secondsAgo: number) => new Date(NOW - secondsAgo * 1000).toISOString();
const dim = (limit: number | null, used = 0) => ({
  limit,
  used,
  reserved: 0,
  remaining: limit === null ? null : limit - used,
});

const view: ProcessView = {
  pid: 'pabcd1.2',
  parent_pid: 'pabcd1',
  root_pid: 'pabcd1',
  namespace: 'pabcd1.2',
  goal: 'summarise issue 42',
  input: null,
  image: 'claude',
  cwd: '/work',
  status: 'failed',
  wait_state: null,
  outcome: {
    type: 'context_yield',
    reason: 'my context is full',
    attempt_id: 'pabcd1.2:2',
    usage: { prompt_tokens: 10, completion_tokens: 5, steps: 2, wall_ms: 900 },
  },
  result_oid: null,
  state_generation: 7,
  attempt: 2,
  resource_budget: {
    tokens: dim(1000, 15),
    cost_usd: dim(null),
    steps: dim(10, 2),
    wall_ms: dim(null, 900),
    children: dim(0),
  },
  created_at: at(3 * 3600),
  updated_at: at(30),
  started_at: at(90),
  ended_at: at(30),
  driver: 'worker',
  mode: 'spawn',
  pending_signal: null,
  pause_reason: null,
  resume_gate: null,
  capabilities: [
    { resource: 'process:spawn', rights: ['use'], constraints: {}, delegable: true, expires_at: null },
  ],
  required_capabilities: [],
  clearance: ['*'],
  labels: [],
  skill_snapshot: [],
  roots: [],
  inherited_paths: [],
  merged: false,
};

describe('ps', () => {
  it('says how long ago, compactly', () => {
    expect([ago(at(45), NOW), ago(at(600), NOW), ago(at(3 * 3600), NOW), ago(at(3 * 86_400), NOW)]).toEqual([
      '45s',
      '10m',
      '3h',
      '3d',
    ]);
  });

  it('has age, started and ended columns', () => {
    const [header, row] = processTable([view], NOW).split('\n');
    expect(header?.split(/\s+/)).toEqual([
      'PID',
      'PARENT',
      'STATUS',
      'IMAGE',
      'AGE',
      'STARTED',
      'ENDED',
      'OUTCOME',
      'GOAL',
    ]);
    expect(row).toMatch(
      /^pabcd1\.2 +pabcd1 +failed +claude +3h +90s +30s +context_yield: my context is full +summarise/,
    );
  });
});

describe('describe', () => {
  it('shows every section of one process', () => {
    const described: DescribeResult = {
      process: view,
      attempts: [
        {
          attempt: 1,
          worker: 'host-a:12',
          claimed_at: at(300),
          ended_at: at(200),
          ended_as: 'stale_execution',
          reason: null,
        },
        {
          attempt: 2,
          worker: 'host-b:7',
          claimed_at: at(90),
          ended_at: at(30),
          ended_as: 'context_yield',
          reason: 'my context is full',
        },
      ],
      ended_at: at(30),
      children: { total: 0, by_status: {} },
      result: null,
      mailbox: {
        unacked_count: 1,
        acked_count: 3,
        pending_notices: { interrupt: 1, normal: 0 },
        first_unread: [
          {
            message_id: 'pabcd1/m4',
            sender: 'pabcd1',
            recipient: 'pabcd1.2',
            kind: 'interrupt',
            channel: 'control',
            correlation_id: null,
            reply_to: null,
            body: 'stop now',
            payload: null,
            labels: [],
            created_at: at(40),
            acked: false,
            acked_at: null,
          },
        ],
      },
    };
    const text = describeText(described);
    expect(text).toMatch(/^pid: +pabcd1\.2$/m);
    expect(text).toMatch(/^goal: +summarise issue 42$/m);
    expect(text).toMatch(/^outcome: +context_yield: my context is full$/m);
    expect(text).toMatch(/^usage: +10\+5 tokens, 2 steps, 900 ms$/m);
    expect(text).toMatch(/^tokens +1000 +15 +0 +985$/m);
    expect(text).toMatch(/^ {2}process:spawn \[use\] delegable$/m);
    expect(text).toMatch(/^2 +host-b:7 +\S+ +\S+ +context_yield: my context is full$/m);
    expect(text).toMatch(/^1 +host-a:12 +\S+ +\S+ +stale_execution$/m);
    expect(text).toMatch(/1 unread, 3 acknowledged; notices not yet delivered: 1 interrupt, 0 normal/);
    expect(text).toMatch(/^ {2}pabcd1\/m4 from pabcd1 interrupt #control stop now$/m);
  });
});
