import { describe, expect, it } from 'vitest';
import { contractRequestSchema, encodeRequestLine, parseRequestLine } from '../src/index.js';

const problem = (line: string) => {
  const parsed = parseRequestLine(line);
  if (parsed.ok) throw new Error(`expected a refusal of ${line}`);
  return parsed;
};

describe('parseRequestLine', () => {
  it('accepts a full request and keeps input as it is', () => {
    const parsed = parseRequestLine(
      '{"version":1,"request_id":"r-1","kind":"probe","input":{"query":"q"},"limits":{"max_steps":7},"schema":{"type":"object"},"extra":true}',
    );
    expect(parsed).toEqual({
      ok: true,
      request: {
        version: 1,
        request_id: 'r-1',
        kind: 'probe',
        input: { query: 'q' },
        limits: { max_steps: 7 },
        schema: { type: 'object' },
      },
    });
    if (parsed.ok) expect(contractRequestSchema.parse(parsed.request)).toEqual(parsed.request);
  });

  it('accepts version 1.0, a null input, a null schema and limits without max_steps', () => {
    const parsed = parseRequestLine(
      '{"version":1.0,"request_id":"r","kind":"k","input":null,"limits":{},"schema":null}',
    );
    expect(parsed).toEqual({ ok: true, request: { version: 1, request_id: 'r', kind: 'k', input: null } });
  });

  it.each([
    ['not json', 'the request is not JSON'],
    ['', 'the request is not JSON'],
    ['[1]', 'the request is not a JSON object'],
    ['"text"', 'the request is not a JSON object'],
    ['{"request_id":"r","kind":"k","input":1}', 'the request has no `version`'],
    ['{"version":"1","request_id":"r","kind":"k","input":1}', 'the request has no `version`'],
    ['{"workflow_contract":1,"id":"x","kind":"k","input":1}', 'the request has no `version`'],
    ['{"version":2,"request_id":"r","kind":"k","input":1}', 'unsupported request version 2'],
    ['{"version":1.5,"request_id":"r","kind":"k","input":1}', 'unsupported request version 1.5'],
    ['{"version":1,"kind":"k","input":1}', 'the request has no `request_id` string'],
    ['{"version":1,"request_id":7,"kind":"k","input":1}', 'the request has no `request_id` string'],
    ['{"version":1,"request_id":"r","input":1}', 'the request has no `kind` string'],
    ['{"version":1,"request_id":"r","kind":"k"}', 'the request has no `input`'],
    ['{"version":1,"request_id":"r","kind":"k","input":1,"limits":[]}', '`limits` must be a JSON object'],
    ['{"version":1,"request_id":"r","kind":"k","input":1,"limits":3}', '`limits` must be a JSON object'],
    ['{"version":1,"request_id":"r","kind":"k","input":1,"schema":"s"}', '`schema` must be a JSON object'],
    ['{"version":1,"request_id":"r","kind":"k","input":1,"schema":[]}', '`schema` must be a JSON object'],
  ])('refuses %s with "%s"', (line, text) => {
    expect(problem(line).problem).toBe(text);
  });

  it.each(['5.5', '"5"', 'null', '0', '-1'])('refuses limits.max_steps %s', (value) => {
    const refused = problem(
      `{"version":1,"request_id":"r","kind":"k","input":1,"limits":{"max_steps":${value}}}`,
    );
    expect(refused.problem).toBe('`limits.max_steps` must be an integer of at least 1');
  });

  it('reports the request id whenever the line was an object with a string request_id', () => {
    expect(problem('{"version":2,"request_id":"r-9","kind":"k","input":1}').requestId).toBe('r-9');
    expect(problem('{"request_id":"r-9"}')).toEqual({
      ok: false,
      problem: 'the request has no `version`',
      requestId: 'r-9',
    });
    expect(problem('{"version":2,"request_id":5}')).toEqual({
      ok: false,
      problem: 'unsupported request version 2',
    });
    expect('requestId' in problem('nope')).toBe(false);
  });

  it('checks in order: version before request_id before kind before input', () => {
    expect(problem('{"version":3}').problem).toBe('unsupported request version 3');
    expect(problem('{"version":1}').problem).toBe('the request has no `request_id` string');
    expect(problem('{"version":1,"request_id":"r"}').problem).toBe('the request has no `kind` string');
  });
});

describe('encodeRequestLine', () => {
  it('writes the reference request with limits, keys in order, ending in one newline', () => {
    const line = encodeRequestLine({
      request_id: 'test-1',
      kind: 'probe',
      input: { query: 'q' },
      limits: { max_steps: 7 },
    });
    expect(line).toBe(
      '{"version":1,"request_id":"test-1","kind":"probe","input":{"query":"q"},"limits":{"max_steps":7}}\n',
    );
  });

  it('omits limits and schema when absent (the reference workflow request)', () => {
    const line = encodeRequestLine({
      schema: null,
      input: { query: 'hello', hints: 'from a foreign engine' },
      kind: 'probe',
      request_id: 'cr-1',
    });
    expect(line).toBe(
      '{"version":1,"request_id":"cr-1","kind":"probe","input":{"query":"hello","hints":"from a foreign engine"}}\n',
    );
  });

  it('puts schema last and sends an undefined input as null', () => {
    expect(
      encodeRequestLine({ request_id: 'r', kind: 'k', input: undefined, schema: { type: 'object' } }),
    ).toBe('{"version":1,"request_id":"r","kind":"k","input":null,"schema":{"type":"object"}}\n');
  });

  it('round-trips through parseRequestLine', () => {
    const line = encodeRequestLine({
      request_id: 'r',
      kind: 'k',
      input: [1, 'two'],
      limits: { max_steps: 3 },
    });
    expect(parseRequestLine(line.trimEnd())).toEqual({
      ok: true,
      request: { version: 1, request_id: 'r', kind: 'k', input: [1, 'two'], limits: { max_steps: 3 } },
    });
  });
});
