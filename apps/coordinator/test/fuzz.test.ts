/**
 * Property-based fuzzing of the HTTP surface against its own contract: fast-check builds requests
 * from `/openapi.json`'s schemas (valid arguments, arguments with a broken part, ids that exist and
 * ids that do not, the right token, a wrong one, none), sends them to a real coordinator on a real
 * Redis, and checks that every answer has a status the operation declares, is never a 5xx, and
 * has a body that matches the schema declared for that status.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type Harness, startHarness } from './helpers.js';

type Schema = Record<string, unknown>;
interface Operation {
  parameters?: { in: 'path' | 'query'; name: string; required?: boolean; schema: Schema }[];
  requestBody?: { content: { 'application/json': { schema: Schema } } };
  responses: Record<
    string,
    { content?: { 'application/json'?: { schema: Schema }; 'text/event-stream'?: unknown } }
  >;
  security?: unknown[];
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

/** Requests per operation: a few thousand in all. `FUZZ_RUNS` raises it for a longer hunt. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 100);

let h: Harness;
let doc: Document;
let ajv: Ajv;
/** Values that name things that exist, so requests reach past "not found" too. */
const known = { pids: [] as string[], tokens: [] as string[], oids: [] as string[], images: ['fuzz-echo'] };

beforeAll(async () => {
  h = await startHarness({ LIBOS_LONG_POLL_MS: '50' });
  await h.admin.putImage('fuzz-echo', { command: 'sh', args: ['-c', 'true', '{result_file}'] });
  await freshProcesses();
  doc = (await (await fetch(`${h.coordinator.url}/openapi.json`)).json()) as Document;
  ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addSchema(rebase({ components: doc.components }), 'openapi');
}, 60_000);
/**
 * Three roots, each with a child and an object. Made again before each operation is fuzzed: an
 * earlier operation may have ended or killed the last ones (`process_exit` is on the surface too).
 */
async function freshProcesses(): Promise<void> {
  known.pids = [];
  known.tokens = [];
  known.oids = [];
  for (let i = 0; i < 3; i++) {
    const root = await h.admin.createProcess({ goal: `fuzz root ${i}`, resource_budget: { children: 50 } });
    known.pids.push(root.pid);
    known.tokens.push(root.token!);
    const parent = h.as(root.token!);
    const child = await parent.spawn({ goal: 'fuzz child', image: 'fuzz-echo' });
    known.pids.push(child.pid);
    known.oids.push((await parent.createObject({ payload: { i } })).oid);
  }
}

afterAll(async () => {
  await h?.stop();
});

/**
 * A schema of the document as Ajv reads it: local `$ref`s point at the schema registered as
 * `openapi`, and OpenAPI 3.0's boolean `exclusiveMinimum`/`exclusiveMaximum` become the numbers
 * of JSON Schema draft 7.
 */
function rebase<T>(schema: T): T {
  const text = JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/');
  return JSON.parse(text, (_key, value: unknown) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
    const node = value as Schema;
    for (const [flag, bound] of [
      ['exclusiveMinimum', 'minimum'],
      ['exclusiveMaximum', 'maximum'],
    ] as const) {
      if (typeof node[flag] !== 'boolean') continue;
      if (node[flag]) node[flag] = node[bound];
      else delete node[flag];
      if (node[flag] !== undefined) delete node[bound];
    }
    if (node.nullable === true) {
      const { nullable: _, ...rest } = node;
      return { anyOf: [rest, { type: 'null' }] };
    }
    return node;
  }) as T;
}

function resolve(schema: Schema): Schema {
  const ref = schema.$ref;
  if (typeof ref !== 'string') return schema;
  return doc.components.schemas[ref.replace('#/components/schemas/', '')] ?? {};
}

/** Names whose values are ids: drawn mostly from what exists. */
function knownFor(name: string | undefined): string[] | undefined {
  if (!name) return undefined;
  if (/pid$|^to$/.test(name)) return known.pids;
  if (/oid$/.test(name)) return known.oids;
  if (name === 'image' || name === 'name') return known.images;
  return undefined;
}

function stringArbitrary(schema: Schema, name?: string): fc.Arbitrary<string> {
  const min = Number(schema.minLength ?? 0);
  const max = Number(schema.maxLength ?? Number.POSITIVE_INFINITY);
  const shaped =
    typeof schema.pattern === 'string'
      ? fc
          .stringMatching(new RegExp(schema.pattern), { size: 'small' })
          .filter((s) => s.length >= min && s.length <= max)
      : fc.string({ minLength: min, maxLength: Math.min(Math.max(min, max), 64) });
  const ids = knownFor(name);
  return ids ? fc.oneof({ arbitrary: fc.constantFrom(...ids), weight: 3 }, shaped) : shaped;
}

/** An arbitrary for a JSON schema of the document; with `broken`, any part may be wrong. */
function arbitrary(raw: Schema, broken: boolean, depth = 0, name?: string): fc.Arbitrary<unknown> {
  const schema = resolve(raw);
  let value: fc.Arbitrary<unknown>;
  if (depth > 4) value = fc.constant(null);
  else if (Array.isArray(schema.enum)) value = fc.constantFrom(...(schema.enum as unknown[]));
  else if (Array.isArray(schema.anyOf) || Array.isArray(schema.oneOf)) {
    const options = (schema.anyOf ?? schema.oneOf) as Schema[];
    value = fc.oneof(...options.map((option) => arbitrary(option, broken, depth + 1, name)));
  } else if (schema.type === 'string') value = stringArbitrary(schema, name);
  else if (schema.type === 'integer' || schema.type === 'number') {
    const min = typeof schema.minimum === 'number' ? schema.minimum : -1e9;
    const max = typeof schema.maximum === 'number' ? schema.maximum : 1e9;
    value =
      schema.type === 'integer'
        ? fc.integer({
            min: Math.max(min, Number.MIN_SAFE_INTEGER),
            max: Math.min(max, Number.MAX_SAFE_INTEGER),
          })
        : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
  } else if (schema.type === 'boolean') value = fc.boolean();
  else if (schema.type === 'array') {
    const items = (schema.items ?? {}) as Schema;
    value = fc.array(arbitrary(items, broken, depth + 1, name), {
      minLength: Number(schema.minItems ?? 0),
      maxLength: Math.min(Number(schema.maxItems ?? 3), 3),
    });
  } else if (schema.type === 'object' || schema.properties) {
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    const required = (schema.required ?? []) as string[];
    const record = fc.record(
      Object.fromEntries(
        Object.entries(properties).map(([key, sub]) => [key, arbitrary(sub, broken, depth + 1, key)]),
      ),
      { requiredKeys: required.filter((key) => key in properties) },
    );
    value = broken
      ? fc
          .tuple(record, fc.option(fc.tuple(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }))))
          .map(([object, extra]) => (extra ? { ...object, [extra[0]]: extra[1] } : object))
      : record;
  } else value = fc.jsonValue({ maxDepth: 2 });
  if (schema.nullable === true) value = fc.option(value, { nil: null });
  // A broken request gets a wrong value here and there, not everywhere: most of it stays valid.
  return broken ? fc.oneof({ arbitrary: value, weight: 8 }, fc.jsonValue({ maxDepth: 2 })) : value;
}

/**
 * A drawn value as URL text. Not `String(value)`: a drawn object may have a key such as
 * `toString` or `valueOf`, and String() of it throws.
 */
function asText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

interface Draw {
  path: string;
  query: Record<string, unknown>;
  body: unknown;
  auth: 'right' | 'wrong' | 'none' | 'other';
}

function requestArbitrary(template: string, operation: Operation): fc.Arbitrary<Draw> {
  const params = operation.parameters ?? [];
  const pathParams = params.filter((p) => p.in === 'path');
  const queryParams = params.filter((p) => p.in === 'query');
  const bodySchema = operation.requestBody?.content['application/json'].schema;
  return fc.boolean().chain((broken) =>
    fc.record({
      path: fc
        .tuple(...pathParams.map((p) => arbitrary(p.schema, broken, 0, p.name).map(asText)))
        .map((values) =>
          pathParams.reduce(
            (path, p, i) => path.replace(`{${p.name}}`, encodeURIComponent(values[i] ?? '')),
            template,
          ),
        ),
      query: fc.record(
        Object.fromEntries(queryParams.map((p) => [p.name, arbitrary(p.schema, broken, 0, p.name)])),
        { requiredKeys: queryParams.filter((p) => p.required).map((p) => p.name) },
      ),
      body: bodySchema ? arbitrary(bodySchema, broken) : fc.constant(undefined),
      auth: fc.constantFrom('right', 'right', 'right', 'right', 'wrong', 'none', 'other'),
    }),
  );
}

function tokenFor(admin: boolean, auth: Draw['auth'], i: number): string | undefined {
  const processToken = known.tokens[i % known.tokens.length]!;
  if (auth === 'none') return undefined;
  if (auth === 'wrong') return 'not-a-token-of-this-coordinator';
  if (auth === 'other') return admin ? processToken : ADMIN_TOKEN;
  return admin ? ADMIN_TOKEN : processToken;
}

const validators = new Map<string, ValidateFunction>();
function validatorFor(key: string, schema: Schema): ValidateFunction {
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile(rebase(schema));
    validators.set(key, validate);
  }
  return validate;
}

describe('the HTTP surface answers only what /openapi.json declares', () => {
  it('documents operations to fuzz', () => {
    expect(Object.keys(doc.paths).length).toBeGreaterThan(20);
  });

  const operations = (): [string, string, Operation][] =>
    Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]): [string, string, Operation] => [path, method, op]),
    );

  // The operation list comes from the running coordinator, so one test walks all of them.
  it('no 5xx, no undeclared status, every body as declared', async () => {
    let requests = 0;
    const seen = new Map<string, Set<number>>();
    for (const [template, method, operation] of operations()) {
      const admin = template.startsWith('/v1/admin');
      const name = `${method.toUpperCase()} ${template}`;
      await freshProcesses();
      let i = 0;
      await fc.assert(
        fc.asyncProperty(requestArbitrary(template, operation), async (draw) => {
          i += 1;
          requests += 1;
          const search = new URLSearchParams();
          for (const [key, value] of Object.entries(draw.query))
            if (value !== undefined) search.set(key, asText(value));
          const token = tokenFor(admin, draw.auth, i);
          const headers: Record<string, string> = {};
          if (token) headers.authorization = `Bearer ${token}`;
          if (draw.body !== undefined) headers['content-type'] = 'application/json';
          const query = search.size > 0 ? `?${search}` : '';
          const response = await fetch(`${h.coordinator.url}${draw.path}${query}`, {
            method: method.toUpperCase(),
            headers,
            ...(draw.body === undefined ? {} : { body: JSON.stringify(draw.body) }),
          });
          // A stream (server-sent events) never ends by itself: its status and media type are checked, then it is closed.
          if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
            await response.body?.cancel();
            const streamed = operation.responses[String(response.status)]?.content?.['text/event-stream'];
            expect(streamed, `${name} → ${response.status} streams undeclared`).toBeDefined();
            return;
          }
          const text = await response.text();
          const where = `${name} → ${response.status} ${text.slice(0, 300)}`;
          expect(response.status, where).toBeLessThan(500);
          const declared = operation.responses[String(response.status)];
          expect(declared, `undeclared status: ${where}`).toBeDefined();
          const statuses = seen.get(name) ?? new Set();
          statuses.add(response.status);
          seen.set(name, statuses);
          const schema = declared?.content?.['application/json']?.schema;
          // a stream (the logs route with follow=true) is not a JSON body
          if (!schema || !response.headers.get('content-type')?.startsWith('application/json')) return;
          const validate = validatorFor(`${name} ${response.status}`, schema);
          const body: unknown = JSON.parse(text);
          expect(validate(body), `${where}: ${ajv.errorsText(validate.errors)}`).toBe(true);
        }),
        { numRuns: RUNS },
      );
    }
    expect(requests).toBeGreaterThanOrEqual(RUNS * operations().length);
    // The fuzzer reached past refusals: successes happened across the surface.
    const succeeded = [...seen.values()].filter((statuses) => statuses.has(200)).length;
    expect(succeeded).toBeGreaterThan(operations().length / 2);
  }, 600_000);
});
