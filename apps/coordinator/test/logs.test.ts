import { type LogRecord, mintToken } from '@libos/kernel';
import { childLogPageSchema } from '@libos/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type Harness, raw, startHarness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  await h.admin.putImage('sh', { command: 'sh', args: ['-c', 'true', 'sh', '{result_file}'] });
});
afterAll(async () => {
  await h.stop();
});

const kernel = () => h.coordinator.kernel;
const line = (text: string, stream: 'o' | 'e' = 'e'): LogRecord => [stream, Date.now(), text];

/** A launched root claimed as a worker would: its attempt 1 can log. */
async function running(): Promise<{ pid: string; fence: string }> {
  const created = await h.admin.createProcess({ goal: 'logs', image: 'sh', launch: true });
  const { tokenHash } = mintToken(created.pid);
  const claimed = await kernel().worker.claim(created.pid, 1, { workerId: 'w', tokenHash, leaseMs: 60_000 });
  return { pid: created.pid, fence: claimed.fence };
}

const get = (path: string, headers: Record<string, string> = {}) =>
  raw(h.coordinator.url, path, { token: ADMIN_TOKEN, headers });

/** Reads server-sent events until the stream closes or `until` says stop. */
async function events(
  response: Response,
  until: (seen: { event: string; id?: string; data: unknown }[]) => boolean = () => false,
) {
  const seen: { event: string; id?: string; data: unknown }[] = [];
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut = buffer.indexOf('\n\n');
    while (cut >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      cut = buffer.indexOf('\n\n');
      const fields = Object.fromEntries(
        block
          .split('\n')
          .filter((l) => !l.startsWith(':'))
          .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]),
      );
      if (fields.event)
        seen.push({ event: fields.event, id: fields.id, data: JSON.parse(fields.data ?? 'null') });
    }
    if (until(seen)) {
      await reader.cancel();
      break;
    }
  }
  return seen;
}

describe('GET /v1/admin/processes/{pid}/logs', () => {
  it('answers a page of the latest attempt, with cursors', async () => {
    const p = await running();
    await kernel().logs.append(
      p.pid,
      1,
      { lines: [line('a'), line('b', 'o'), line('c')], dropped: 0, end: false },
      1 << 20,
    );
    const all = await get(`/v1/admin/processes/${p.pid}/logs`);
    expect(all.status).toBe(200);
    const page = childLogPageSchema.parse(all.body);
    expect(page).toMatchObject({ pid: p.pid, attempt: 1, ended: false, dropped_bytes: 0, has_more: false });
    expect(page.lines.map((l) => [l.stream, l.line])).toEqual([
      ['stderr', 'a'],
      ['stdout', 'b'],
      ['stderr', 'c'],
    ]);
    const first = childLogPageSchema.parse((await get(`/v1/admin/processes/${p.pid}/logs?limit=1`)).body);
    expect(first.has_more).toBe(true);
    const rest = childLogPageSchema.parse(
      (await get(`/v1/admin/processes/${p.pid}/logs?attempt=1&after=${first.next}`)).body,
    );
    expect(rest.lines.map((l) => l.line)).toEqual(['b', 'c']);
  });

  it('refuses an unknown pid, bad parameters and callers without the admin token', async () => {
    const p = await running();
    const unknown = await get(`/v1/admin/processes/${p.pid}.99/logs`);
    expect([unknown.status, (unknown.body as { error: { code: string } }).error.code]).toEqual([
      404,
      'not_found',
    ]);
    for (const query of [
      'attempt=0',
      'attempt=2',
      'attempt=x',
      'follow=maybe',
      'after=5',
      'limit=0',
      'tail=3',
    ]) {
      const bad = await get(`/v1/admin/processes/${p.pid}/logs?${query}`);
      expect([query, bad.status, (bad.body as { error: { code: string } }).error.code]).toEqual([
        query,
        400,
        'invalid_argument',
      ]);
    }
    const badResume = await get(`/v1/admin/processes/${p.pid}/logs?follow=true`, { 'last-event-id': 'x' });
    expect(badResume.status).toBe(400);
    expect((await raw(h.coordinator.url, `/v1/admin/processes/${p.pid}/logs`)).status).toBe(401);
    expect((await raw(h.coordinator.url, `/v1/admin/processes/${p.pid}/logs`, { token: 'x' })).status).toBe(
      403,
    );
  });

  it('follows new lines as server-sent events until the attempt ends', async () => {
    const p = await running();
    await kernel().logs.append(p.pid, 1, { lines: [line('before')], dropped: 0, end: false }, 1 << 20);
    const response = await fetch(`${h.coordinator.url}/v1/admin/processes/${p.pid}/logs?follow=true`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reading = events(response);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await kernel().logs.append(
      p.pid,
      1,
      { lines: [line('live 1'), line('live 2')], dropped: 0, end: false },
      1 << 20,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    await kernel().logs.append(p.pid, 1, { lines: [line('last')], dropped: 0, end: true }, 1 << 20);
    const seen = await reading; // the server closes the stream after `end`
    const texts = seen.flatMap((e) => childLogPageSchema.parse(e.data).lines.map((l) => l.line));
    expect(texts).toEqual(['before', 'live 1', 'live 2', 'last']);
    expect(seen.at(-1)?.event).toBe('end');
    expect(seen.slice(0, -1).every((e) => e.event === 'page')).toBe(true);
    // a reconnect after the second event resumes there
    const resumed = await fetch(`${h.coordinator.url}/v1/admin/processes/${p.pid}/logs?follow=true`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'last-event-id': seen[1]!.id! },
    });
    const again = await events(resumed);
    expect(again.flatMap((e) => childLogPageSchema.parse(e.data).lines.map((l) => l.line))).toEqual(['last']);
  });

  it('closes a quiet stream after the long-poll window, without `end`, for the client to resume', async () => {
    const p = await running();
    const started = Date.now();
    const response = await fetch(`${h.coordinator.url}/v1/admin/processes/${p.pid}/logs?follow=true`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    const seen = await events(response); // the harness's window is 2 s
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(seen.map((e) => e.event)).toEqual(['page']);
  });

  it('stops following when the client goes away, holding nothing', async () => {
    const p = await running();
    const hub = kernel().wakeHub;
    const before = hub.size;
    const controller = new AbortController();
    const response = await fetch(`${h.coordinator.url}/v1/admin/processes/${p.pid}/logs?follow=true`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      signal: controller.signal,
    });
    const first = await events(response, (seen) => seen.length >= 1);
    expect(first[0]).toMatchObject({ event: 'page' });
    expect(hub.size).toBeGreaterThan(before);
    controller.abort();
    for (let i = 0; i < 100 && hub.size > before; i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(hub.size).toBe(before);
  });

  it('is in the OpenAPI document with every status it answers', async () => {
    const doc = (await raw(h.coordinator.url, '/openapi.json')).body as {
      paths: Record<string, { get: { responses: Record<string, { content: Record<string, unknown> }> } }>;
    };
    const route = doc.paths['/v1/admin/processes/{pid}/logs']?.get;
    expect(Object.keys(route?.responses ?? {}).sort()).toEqual([
      '200',
      '400',
      '401',
      '403',
      '404',
      '408',
      '414',
      '431',
      '500',
      '503',
    ]);
    expect(Object.keys(route?.responses['200']?.content ?? {}).sort()).toEqual([
      'application/json',
      'text/event-stream',
    ]);
  });
});
