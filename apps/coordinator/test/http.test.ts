import { getEventListeners } from 'node:events';
import { createConnection } from 'node:net';
import { mintToken } from '@libos/kernel';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN_TOKEN, type Harness, raw, startHarness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  await h.admin.putImage('echo', { command: 'sh', args: ['-c', 'exit 0', 'sh', '{result_file}'] });
});
afterAll(async () => {
  await h.stop();
});

describe('authentication and authorisation', () => {
  test('a tool call without a token is 401 and changes nothing', async () => {
    const res = await raw(h.coordinator.url, '/v1/tools/spawn_child_process', {
      method: 'POST',
      body: JSON.stringify({ goal: 'x' }),
    });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ error: { code: 'unauthenticated' } });
  });

  test('a wrong token is 401', async () => {
    const root = await h.admin.createProcess({ goal: 'root' });
    const forged = `${root.pid}.${'A'.repeat(43)}`;
    const res = await raw(h.coordinator.url, '/v1/tools/get_process', {
      method: 'POST',
      token: forged,
      body: '{}',
    });
    expect(res.status).toBe(401);
    const garbage = await raw(h.coordinator.url, '/v1/tools/get_process', {
      method: 'POST',
      token: 'nope',
      body: '{}',
    });
    expect(garbage.status).toBe(401);
  });

  test('a process token on an admin route is 403; no token is 401', async () => {
    const root = await h.admin.createProcess({ goal: 'root' });
    const withProcessToken = await raw(h.coordinator.url, '/v1/admin/images', { token: root.token! });
    expect(withProcessToken.status).toBe(403);
    expect(withProcessToken.body).toMatchObject({ error: { code: 'permission_denied' } });
    expect((await raw(h.coordinator.url, '/v1/admin/images')).status).toBe(401);
    expect((await raw(h.coordinator.url, '/admin/queues')).status).toBe(401);
  });

  test('a terminal process’s token is dead', async () => {
    const root = await h.admin.createProcess({ goal: 'short-lived' });
    const client = h.as(root.token!);
    await client.exit({ payload: { done: true } });
    const res = await raw(h.coordinator.url, '/v1/tools/get_process', {
      method: 'POST',
      token: root.token!,
      body: '{}',
    });
    expect(res.status).toBe(401);
  });

  test('a child’s token cannot act on its sibling, and the refusal changes nothing', async () => {
    const root = await h.admin.createProcess({ goal: 'parent' });
    const parent = h.as(root.token!);
    const a = await parent.spawn({ goal: 'a', image: 'echo' });
    const b = await parent.spawn({ goal: 'b', image: 'echo' });
    // Act as the worker that runs `a`: mint its token and claim its launch.
    const { token, tokenHash } = mintToken(a.pid);
    await h.coordinator.kernel.worker.claim(a.pid, 1, { workerId: 'test', tokenHash, leaseMs: 60_000 });
    const before = await h.admin.getProcess(b.pid);
    for (const [tool, body] of [
      ['signal_child_process', { child_pid: b.pid, signal: 'cancel' }],
      ['wait_child_process', { child_pid: b.pid, block: false }],
      ['send_process_message', { to: b.pid, body: 'hi sibling' }],
    ] as const) {
      const res = await raw(h.coordinator.url, `/v1/tools/${tool}`, {
        method: 'POST',
        token,
        body: JSON.stringify(body),
      });
      expect(res.status, tool).toBe(403);
      expect(res.body).toMatchObject({ error: { code: 'permission_denied' } });
    }
    const after = await h.admin.getProcess(b.pid);
    expect(after.state_generation).toBe(before.state_generation);
    expect(after.status).toBe('runnable');
  });
});

describe('validation and errors', () => {
  test('a bad body is 400 invalid_argument naming each bad path', async () => {
    const root = await h.admin.createProcess({ goal: 'v' });
    const res = await raw(h.coordinator.url, '/v1/tools/send_process_message', {
      method: 'POST',
      token: root.token!,
      body: JSON.stringify({ to: 'self', kind: 'loud', channel: 7 }),
    });
    expect(res.status).toBe(400);
    const body = res.body as { error: { code: string; message: string } };
    expect(body.error.code).toBe('invalid_argument');
    expect(body.error.message).toContain('kind');
    expect(body.error.message).toContain('channel');
  });

  test('an image with a cwd, runtime paths and limits is stored and shown with its paths normalized', async () => {
    const spec = {
      command: 'sh',
      args: ['run.sh', '{result_file}'],
      cwd: '/srv//work/',
      runtime: ['/opt/tools/'],
      limits: { memory_mb: 256, pids: 64 },
      network: 'none',
    };
    const put = await raw(h.coordinator.url, '/v1/admin/images/with-paths', {
      method: 'PUT',
      token: ADMIN_TOKEN,
      body: JSON.stringify(spec),
    });
    expect(put.status).toBe(200);
    const shown = { cwd: '/srv/work', runtime: ['/opt/tools'], limits: { memory_mb: 256, pids: 64 } };
    expect(put.body).toMatchObject({ name: 'with-paths', spec: shown });
    const one = await raw(h.coordinator.url, '/v1/admin/images/with-paths', { token: ADMIN_TOKEN });
    expect(one).toMatchObject({ status: 200, body: { spec: shown } });
    const all = await raw(h.coordinator.url, '/v1/admin/images', { token: ADMIN_TOKEN });
    expect(all.status).toBe(200);
    expect((all.body as { images: { name: string }[] }).images.map((i) => i.name)).toContain('with-paths');
  });

  test('an image without {result_file} is refused and not stored', async () => {
    const res = await raw(h.coordinator.url, '/v1/admin/images/broken', {
      method: 'PUT',
      token: ADMIN_TOKEN,
      body: JSON.stringify({ command: 'true', args: [] }),
    });
    expect(res.status).toBe(400);
    expect((await raw(h.coordinator.url, '/v1/admin/images/broken', { token: ADMIN_TOKEN })).status).toBe(
      404,
    );
  });

  test('an oversized body is 413 payload_too_large', async () => {
    const root = await h.admin.createProcess({ goal: 'big' });
    const res = await raw(h.coordinator.url, '/v1/tools/create_object', {
      method: 'POST',
      token: root.token!,
      body: JSON.stringify({ payload: 'x'.repeat(5 * 1024 * 1024) }),
    });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ error: { code: 'payload_too_large' } });
  });

  test('unknown routes answer the error envelope', async () => {
    const res = await raw(h.coordinator.url, '/v1/tools/nope', { method: 'POST', body: '{}' });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error: { code: 'not_found' } });
  });
});

describe('operations', () => {
  test('healthz reports Redis', async () => {
    const res = await raw(h.coordinator.url, '/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', redis: { status: 'ok' } });
  });

  test('metrics expose processes by status and queue depth', async () => {
    await h.admin.createProcess({ goal: 'counted' });
    const res = await raw(h.coordinator.url, '/metrics');
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/libos_processes\{status="running"\} [1-9]/);
    expect(res.text).toContain('libos_queue_jobs{pool="default",state="waiting"}');
    expect(res.text).toContain('libos_wake_latency_seconds');
  });

  test('the OpenAPI document lists every tool and admin route', async () => {
    const res = await raw(h.coordinator.url, '/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/tools/spawn_child_process',
        '/v1/tools/receive_process_messages',
        '/v1/admin/processes',
      ]),
    );
  });

  test('Bull Board lists the launch queues behind admin auth', async () => {
    const basic = `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`;
    const page = await raw(h.coordinator.url, '/admin/queues', { headers: { authorization: basic } });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<html');
    const api = await raw(h.coordinator.url, '/admin/queues/api/queues', { token: ADMIN_TOKEN });
    expect(api.status).toBe(200);
    const names = (api.body as { queues: { name: string }[] }).queues.map((q) => q.name);
    expect(names).toContain('{launch-default}');
  });
});

describe('notices', () => {
  test('an interrupt rides on the next non-message tool call, a normal message after a call, ids only', async () => {
    const root = await h.admin.createProcess({ goal: 'noticed' });
    const me = h.as(root.token!);
    const interrupt = await me.send({ to: 'self', kind: 'interrupt', body: 'stop and re-plan' });
    // A message tool does not consume the interrupt notice.
    await me.read({ ack: false, kind: 'normal' });
    expect(me.lastNotices).toEqual([]);
    await me.getProcess();
    expect(me.lastNotices).toEqual([
      expect.objectContaining({ kind: 'interrupt', message_ids: [interrupt.message_id] }),
    ]);
    expect(JSON.stringify(me.lastNotices)).not.toContain('stop and re-plan');
    // Delivered once.
    await me.getProcess();
    expect(me.lastNotices).toEqual([]);
    const normal = await me.send({ to: 'self', body: 'fyi' });
    await me.getProcess();
    expect(me.lastNotices).toEqual([
      expect.objectContaining({ kind: 'normal', message_ids: [normal.message_id] }),
    ]);
  });
});

describe('metrics of the distributed loop', () => {
  test('a completion is counted by outcome type and its wake latency observed', async () => {
    const root = await h.admin.createProcess({ goal: 'measured' });
    const parent = h.as(root.token!);
    const child = await parent.spawn({ goal: 'done soon', image: 'echo' });
    const waiting = parent.wait({ child_pid: child.pid });
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Act as the worker: claim the launch and complete it.
    const { tokenHash } = mintToken(child.pid);
    const claimed = await h.coordinator.kernel.worker.claim(child.pid, 1, {
      workerId: 't',
      tokenHash,
      leaseMs: 60_000,
    });
    await h.coordinator.kernel.worker.complete(child.pid, 1, claimed.fence, {
      terminal: { type: 'captured' },
      report: { ok: true },
      usage: { prompt_tokens: 1, completion_tokens: 1, steps: 1, wall_ms: 5 },
    });
    expect((await waiting).status).toBe('exited');
    const res = await raw(h.coordinator.url, '/metrics');
    expect(res.text).toMatch(/libos_completions\{type="completed"\} [1-9]/);
    expect(res.text).toMatch(/libos_wake_latency_seconds_count [1-9]/);
    expect(res.text).toMatch(/libos_launches_total\{pool="default",attempt="first"\} [1-9]/);
  });
});

describe('notices on refusals', () => {
  test('an interrupt due when a call is refused rides on the refusal itself, once', async () => {
    const root = await h.admin.createProcess({ goal: 'refused then told' });
    const me = h.as(root.token!);
    const interrupt = await me.send({ to: 'self', kind: 'interrupt', body: 'new instructions' });
    const told = [expect.objectContaining({ kind: 'interrupt', message_ids: [interrupt.message_id] })];
    await expect(me.getProcess({ pid: 'pnosuchproc1' })).rejects.toMatchObject({
      code: 'not_found',
      notices: told,
    });
    expect(me.lastNotices).toEqual(told);
    await me.getProcess();
    expect(me.lastNotices).toEqual([]);
  });
});

describe('long-polls', () => {
  test('a blocking receive with nothing to receive holds the request for the whole window', async () => {
    const root = await h.admin.createProcess({ goal: 'patient' });
    const started = Date.now();
    const res = await raw(h.coordinator.url, '/v1/tools/receive_process_messages', {
      method: 'POST',
      token: root.token!,
      body: JSON.stringify({ channel: 'never' }),
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ready: false, messages: [] });
    // The harness's window is 2 s; an early answer would make every SDK wait a busy loop.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_900);
  });

  test('a client that goes away ends its long-poll: the wait lets go of its wake-up', async () => {
    const root = await h.admin.createProcess({ goal: 'leaves early' });
    const hub = h.coordinator.kernel.wakeHub;
    const before = hub.size;
    const onShutdown = () => getEventListeners(h.coordinator.shutdown.signal, 'abort').length;
    const shutdownListeners = onShutdown();
    // Its own connection (not a pooled one), closed from this end while the poll is held.
    const body = JSON.stringify({ channel: 'never' });
    const { port } = new URL(h.coordinator.url);
    const socket = createConnection({ host: '127.0.0.1', port: Number(port) });
    socket.on('error', () => undefined);
    socket.write(
      `POST /v1/tools/receive_process_messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${root.token}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await expect.poll(() => hub.size).toBeGreaterThan(before);
    socket.destroy();
    // Well inside the 2 s window: the abort, not the window's end, let go of it.
    await expect.poll(() => hub.size, { timeout: 1_000 }).toBe(before);
    // Nor does the coordinator's shutdown signal keep anything of it.
    expect(onShutdown()).toBe(shutdownListeners);
  });

  test('many long-polls at once: each listens on the shutdown signal, and Node warns of no leak', async () => {
    const root = await h.admin.createProcess({ goal: 'many waits' });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const listeners = () => getEventListeners(h.coordinator.shutdown.signal, 'abort').length;
      const shutdownListeners = listeners();
      const polls = Array.from({ length: 12 }, (_, i) =>
        raw(h.coordinator.url, '/v1/tools/receive_process_messages', {
          method: 'POST',
          token: root.token!,
          body: JSON.stringify({ channel: `never-${i}` }),
        }),
      );
      // All 12 held at once: each its own listener on the signal.
      await expect.poll(listeners).toBe(shutdownListeners + 12);
      for (const res of await Promise.all(polls)) expect(res.body).toMatchObject({ ready: false });
      // A warning is emitted on the next tick after the listener that crossed the limit.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
      expect(listeners()).toBe(shutdownListeners);
    } finally {
      process.off('warning', onWarning);
    }
  });

  test('a coordinator that closes answers its open long-polls at once, not at the window’s end', async () => {
    const own = await startHarness({ LIBOS_LONG_POLL_MS: '20000' });
    try {
      const root = await own.admin.createProcess({ goal: 'outlives its coordinator' });
      const hub = own.coordinator.kernel.wakeHub;
      const receiving = raw(own.coordinator.url, '/v1/tools/receive_process_messages', {
        method: 'POST',
        token: root.token!,
        body: JSON.stringify({ channel: 'never' }),
      });
      await expect.poll(() => hub.size).toBeGreaterThan(0);
      const closedAt = Date.now();
      await own.coordinator.close();
      const res = await receiving;
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ ready: false, messages: [] });
      expect(Date.now() - closedAt).toBeLessThan(5_000);
    } finally {
      await own.stop();
    }
  });

  test('a shutdown lets requests in flight finish for LIBOS_SHUTDOWN_GRACE_MS, then closes what is still open', async () => {
    const own = await startHarness({ LIBOS_SHUTDOWN_GRACE_MS: '1500' });
    const url = new URL(own.coordinator.url);
    const open = async () => {
      const socket = createConnection({ host: url.hostname, port: Number(url.port) });
      await new Promise((resolve) => socket.once('connect', resolve));
      let received = '';
      socket.setEncoding('utf8').on('data', (chunk) => (received += chunk));
      const ended = new Promise((resolve) => socket.once('close', resolve));
      return { socket, ended, received: () => received };
    };
    try {
      const root = await own.admin.createProcess({ goal: 'asks while its coordinator stops' });
      const head = (length: number) =>
        `POST /v1/tools/get_process HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${root.token}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n{`;
      // One client goes quiet with its body half sent; the other sends the rest during the grace.
      const quiet = await open();
      quiet.socket.write(head(100));
      const slow = await open();
      slow.socket.write(head(2));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const closedAt = Date.now();
      const closing = own.coordinator.close();
      await new Promise((resolve) => setTimeout(resolve, 300));
      slow.socket.write('}');
      await expect.poll(slow.received).toMatch(/^HTTP\/1\.1 200 [\s\S]*"pid":"/);
      await closing;
      const took = Date.now() - closedAt;
      // Held by the quiet client for the grace, no longer (Node alone waited 73 s for it).
      expect(took).toBeGreaterThanOrEqual(1_400);
      expect(took).toBeLessThan(5_000);
      await quiet.ended;
      expect(quiet.received()).toBe('');
    } finally {
      await own.stop();
    }
  });

  test('a message arriving during the window answers the blocked receive at once', async () => {
    const root = await h.admin.createProcess({ goal: 'listener' });
    const me = h.as(root.token!);
    const receiving = me.receive({ channel: 'now' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const sent = await me.send({ to: 'self', channel: 'now', body: 'hello' });
    const started = Date.now();
    const got = await receiving;
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(got.messages.map((m) => m.message_id)).toEqual([sent.message_id]);
  });
});
