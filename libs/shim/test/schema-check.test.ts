import { describe, expect, it } from 'vitest';
import { schemaProblem } from '../src/schema-check.js';

describe('schemaProblem', () => {
  it('names every place the answer breaks the schema, as a JSON path', () => {
    const schema = {
      type: 'object',
      properties: {
        items: { type: 'array', items: { type: 'object', properties: { 'a b': { type: 'string' } } } },
      },
      required: ['items', 'total'],
    };
    expect(schemaProblem(schema, { items: [{ 'a b': 'ok' }, { 'a b': 3 }] })).toBe(
      `$: must have required property 'total'; $.items[1]["a b"]: must be string`,
    );
    expect(schemaProblem(schema, { items: [], total: 1 })).toBeUndefined();
  });

  it('follows $ref into definitions (draft-07) and reads 2020-12 schemas', () => {
    const draft7 = { $ref: '#/definitions/n', definitions: { n: { type: 'integer' } } };
    expect(schemaProblem(draft7, 1)).toBeUndefined();
    expect(schemaProblem(draft7, 'x')).toBe('$: must be integer');
    const modern = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      prefixItems: [{ type: 'string' }],
    };
    expect(schemaProblem(modern, [1])).toBe('$[0]: must be string');
  });

  it('a schema it cannot compile is named as such', () => {
    expect(schemaProblem({ type: 'no-such-type' }, 1)).toMatch(/^the schema cannot be checked: /);
  });
});
