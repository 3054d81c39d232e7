import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type Harness, startHarness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.stop();
});

test('/openapi.json from a running coordinator is a valid OpenAPI document whose every $ref resolves', async () => {
  const response = await fetch(`${h.coordinator.url}/openapi.json`);
  expect(response.status).toBe(200);
  const doc = (await response.json()) as { paths: Record<string, unknown>; components: { schemas: object } };
  const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map(
    (m) => m[1],
  );
  expect(refs.length).toBeGreaterThan(0);
  for (const ref of new Set(refs)) expect(doc.components.schemas).toHaveProperty([ref!]);
  // validate() dereferences in place: hand it a copy.
  await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
  expect(Object.keys(doc.paths)).toContain('/v1/tools/create_object');
});
