import { describe, expect, it } from 'vitest';
import { decodeResultFile, resultDocument } from '../src/index.js';

const USAGE = {
  prompt_tokens: 7,
  completion_tokens: 3,
  total_tokens: 10,
  prompt_cache_hit_tokens: 0,
  prompt_cache_miss_tokens: 7,
};

const decode = (doc: unknown, id = 'test-1') => decodeResultFile(JSON.stringify(doc), id);
const problemOf = (text: string | Uint8Array, id = 'test-1') => {
  const decoded = decodeResultFile(text, id);
  if (decoded.ok) throw new Error('expected a malformed result');
  return decoded.problem;
};
const base = { version: 1, request_id: 'test-1' };

describe('decodeResultFile', () => {
  it('decodes each status with its fields', () => {
    expect(decode({ ...base, status: 'completed', output: { a: 1 }, usage: USAGE, steps: 2 })).toEqual({
      ok: true,
      result: { status: 'completed', output: { a: 1 }, usage: USAGE, steps: 2 },
    });
    expect(decode({ ...base, status: 'completed', output: null })).toEqual({
      ok: true,
      result: { status: 'completed', output: null },
    });
    expect(decode({ ...base, status: 'no_report', reason: 'ignored' })).toEqual({
      ok: true,
      result: { status: 'no_report' },
    });
    expect(decode({ ...base, status: 'max_steps_exhausted', steps: 0 })).toEqual({
      ok: true,
      result: { status: 'max_steps_exhausted', steps: 0 },
    });
    for (const status of ['context_yield', 'aborted', 'interrupted', 'failed'] as const) {
      expect(decode({ ...base, status, reason: 'why', output: 'ignored' })).toEqual({
        ok: true,
        result: { status, reason: 'why' },
      });
    }
  });

  it('accepts version 1.0, unknown fields, a zero price and negative total/cache counters', () => {
    const text =
      '{"version":1.0,"request_id":"test-1","status":"no_report","x":1,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":-1,"prompt_cache_hit_tokens":-2,"prompt_cache_miss_tokens":-3,"cost_usd":0}}';
    expect(decodeResultFile(text, 'test-1')).toEqual({
      ok: true,
      result: {
        status: 'no_report',
        usage: {
          prompt_tokens: 0,
          completion_tokens: 0,
          total_tokens: -1,
          prompt_cache_hit_tokens: -2,
          prompt_cache_miss_tokens: -3,
          cost_usd: 0,
        },
      },
    });
  });

  it('refuses what is not JSON, with the parser error', () => {
    expect(problemOf('{"version":')).toMatch(/^not JSON: .+/);
    expect(problemOf('')).toMatch(/^not JSON: /);
    expect(problemOf(new Uint8Array([0x7b, 0xff, 0x7d]))).toMatch(/^not JSON: /);
  });

  it.each([
    ['[]', 'not a JSON object'],
    ['null', 'not a JSON object'],
    ['{"request_id":"test-1","status":"no_report"}', 'not a version 1 result'],
    ['{"version":"1","request_id":"test-1","status":"no_report"}', 'not a version 1 result'],
    ['{"version":2,"request_id":"test-1","status":"no_report"}', 'not a version 1 result'],
    ['{"version":1.5,"request_id":"test-1","status":"no_report"}', 'not a version 1 result'],
    ['{"version":1,"status":"no_report"}', 'no request_id'],
    ['{"version":1,"request_id":1,"status":"no_report"}', 'no request_id'],
    ['{"version":1,"request_id":"test-9","status":"no_report"}', 'answers request test-9, not test-1'],
    ['{"version":1,"request_id":"test-1"}', 'no status'],
    ['{"version":1,"request_id":"test-1","status":3}', 'no status'],
    ['{"version":1,"request_id":"test-1","status":"completed"}', 'a completed result without output'],
    [
      '{"version":1,"request_id":"test-1","status":"context_yield"}',
      'a context_yield result without a reason',
    ],
    [
      '{"version":1,"request_id":"test-1","status":"aborted","reason":5}',
      'a aborted result without a reason',
    ],
    [
      '{"version":1,"request_id":"test-1","status":"interrupted","reason":null}',
      'a interrupted result without a reason',
    ],
    ['{"version":1,"request_id":"test-1","status":"failed"}', 'a failed result without a reason'],
    ['{"version":1,"request_id":"test-1","status":"finished","output":1}', 'unknown status finished'],
  ])('%s → %s', (text, expected) => {
    expect(problemOf(text)).toBe(expected);
  });

  const withUsage = (usage: unknown) => ({ ...base, status: 'completed', output: 1, usage });
  it.each([
    ['null usage', null],
    ['a string usage', 'lots'],
    ['a missing counter', { ...USAGE, prompt_cache_miss_tokens: undefined }],
    ['a string counter', { ...USAGE, total_tokens: '10' }],
    ['a fractional counter', { ...USAGE, prompt_tokens: 1.5 }],
    ['a fractional cache counter', { ...USAGE, prompt_cache_hit_tokens: 0.5 }],
    ['negative prompt tokens', { ...USAGE, prompt_tokens: -1 }],
    ['negative completion tokens', { ...USAGE, completion_tokens: -1 }],
    ['a string cost', { ...USAGE, cost_usd: '0.25' }],
    ['a negative cost', { ...USAGE, cost_usd: -1 }],
    ['a null cost', { ...USAGE, cost_usd: null }],
  ])('refuses %s as malformed usage', (_name, usage) => {
    expect(problemOf(JSON.stringify(withUsage(usage)))).toBe('malformed usage');
  });

  it('refuses an infinite cost (1e999) as malformed usage', () => {
    const text = `{"version":1,"request_id":"test-1","status":"completed","output":1,"usage":${JSON.stringify(USAGE).replace('}', ',"cost_usd":1e999}')}}`;
    expect(problemOf(text)).toBe('malformed usage');
  });

  it.each([[-1], [1.5], ['2'], [null]])('refuses steps %j as malformed steps', (steps) => {
    expect(problemOf(JSON.stringify({ ...base, status: 'no_report', steps }))).toBe('malformed steps');
  });

  it('checks the status before usage and usage before steps', () => {
    expect(problemOf(JSON.stringify({ ...base, status: 'finished', usage: null }))).toBe(
      'unknown status finished',
    );
    expect(problemOf(JSON.stringify({ ...base, status: 'no_report', usage: null, steps: -1 }))).toBe(
      'malformed usage',
    );
  });
});

describe('resultDocument', () => {
  it('orders keys version, request_id, status, output, usage, steps', () => {
    const doc = resultDocument('r-1', {
      steps: 2,
      usage: { ...USAGE, cost_usd: 0 },
      output: { answer: 'x' },
      status: 'completed',
    });
    expect(JSON.stringify(doc)).toBe(
      '{"version":1,"request_id":"r-1","status":"completed","output":{"answer":"x"},"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":7,"cost_usd":0},"steps":2}',
    );
  });

  it('writes reason for the reasoned statuses and neither output nor reason otherwise', () => {
    expect(
      JSON.stringify(resultDocument('r', { status: 'interrupted', reason: 'the parent closed stdin' })),
    ).toBe('{"version":1,"request_id":"r","status":"interrupted","reason":"the parent closed stdin"}');
    expect(JSON.stringify(resultDocument('r', { status: 'no_report', steps: 0 }))).toBe(
      '{"version":1,"request_id":"r","status":"no_report","steps":0}',
    );
  });

  it('writes an undefined output as null, so the document stays decodable', () => {
    const doc = resultDocument('r', { status: 'completed', output: undefined });
    expect(decodeResultFile(JSON.stringify(doc), 'r')).toEqual({
      ok: true,
      result: { status: 'completed', output: null },
    });
  });
});
