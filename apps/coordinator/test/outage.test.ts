import { afterAll, beforeAll, expect, test } from 'vitest';
import { ADMIN_TOKEN, type Harness, raw, startHarness } from './helpers.js';

let h: Harness;
let token: string;
let pid: string;
let oid: string;
beforeAll(async () => {
  // A private server: this file stops it.
  h = await startHarness({}, { own: true });
  await h.admin.putImage('echo', { command: 'sh', args: ['-c', 'exit 0', 'sh', '{result_file}'] });
  const root = await h.admin.createProcess({ goal: 'outage' });
  token = root.token!;
  pid = root.pid;
  const created = await raw(h.coordinator.url, '/v1/tools/create_object', {
    method: 'POST',
    token,
    body: JSON.stringify({ payload: { a: 1 } }),
  });
  oid = (created.body as { oid: string }).oid;
  await h.redis.stop();
}, 30_000);
afterAll(async () => {
  await h.coordinator.close();
});

test('during a Redis outage every call answers 503 unavailable in the envelope, never 500', async () => {
  const admin: Array<[string, string, unknown?]> = [
    ['GET', '/v1/admin/images'],
    ['GET', '/v1/admin/images/other'],
    ['PUT', '/v1/admin/images/other', { command: 'sh', args: ['{result_file}'] }],
    ['GET', '/v1/admin/processes'],
    ['POST', '/v1/admin/processes', { goal: 'during the outage' }],
    ['GET', `/v1/admin/processes/${pid}`],
    ['POST', `/v1/admin/processes/${pid}/signal`, { signal: 'cancel' }],
    ['GET', `/v1/admin/objects/${encodeURIComponent(oid)}`],
    ['GET', `/v1/admin/processes/${pid}/messages`],
    ['GET', `/v1/admin/processes/${pid}/objects`],
    ['GET', `/v1/admin/processes/${pid}/tree`],
    ['GET', `/v1/admin/processes/${pid}/describe`],
    ['GET', `/v1/admin/processes?root=${pid}`],
    ['GET', '/v1/admin/processes?roots=true'],
  ];
  const tools: Array<[string, unknown]> = [
    ['get_process', {}],
    ['create_object', { payload: 1 }],
    ['read_object', { oid }],
    ['spawn_child_process', { goal: 'x', image: 'echo' }],
  ];
  const answers = await Promise.all([
    ...admin.map(([method, path, body]) =>
      raw(h.coordinator.url, path, {
        method,
        token: ADMIN_TOKEN,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).then((res) => ({ call: `${method} ${path}`, ...res })),
    ),
    ...tools.map(([tool, body]) =>
      raw(h.coordinator.url, `/v1/tools/${tool}`, { method: 'POST', token, body: JSON.stringify(body) }).then(
        (res) => ({ call: tool, ...res }),
      ),
    ),
  ]);
  const seen = Object.fromEntries(answers.map((a) => [a.call, `${a.status} ${JSON.stringify(a.body)}`]));
  const wanted = Object.fromEntries(
    answers.map((a) => [a.call, expect.stringMatching(/^503 .*"code":"unavailable"/)]),
  );
  expect(seen).toEqual(wanted);
  const health = await raw(h.coordinator.url, '/healthz');
  expect(health.status).toBe(503);
  const metrics = await raw(h.coordinator.url, '/metrics');
  expect(metrics.status).toBe(503);
  expect(metrics.body).toMatchObject({ error: { code: 'unavailable' } });
}, 60_000);
