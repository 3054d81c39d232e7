import net from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MAX_JSON_DEPTH } from '../src/body-guard.js';
import { connectionLimit, openFilesLimit, RESERVED_DESCRIPTORS } from '../src/connection-limit.js';
import { ADMIN_TOKEN, type Harness, raw, startHarness } from './helpers.js';

const BODY_LIMIT = 64 * 1024;
let h: Harness;
let token: string;
beforeAll(async () => {
  h = await startHarness({ LIBOS_BODY_LIMIT_BYTES: String(BODY_LIMIT) });
  token = (await h.admin.createProcess({ goal: 'edges' })).token!;
});
afterAll(async () => {
  await h.stop();
});

/** One raw HTTP exchange on a fresh socket: what the server wrote until it closed. */
function rawExchange(request: string): Promise<{ status: number; body: unknown; text: string }> {
  const { hostname, port } = new URL(h.coordinator.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(request));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      text += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      const bodyText = text.slice(text.indexOf('\r\n\r\n') + 4);
      let body: unknown = bodyText;
      try {
        body = JSON.parse(bodyText);
      } catch {}
      resolve({ status, body, text });
    });
  });
}

/** A raw connection to `url`, and what the server wrote on it until it closed. */
async function connect(url: string): Promise<{ socket: net.Socket; closed: Promise<string> }> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  let text = '';
  socket.setEncoding('utf8').on('data', (chunk) => {
    text += chunk;
  });
  return { socket, closed: new Promise((resolve) => socket.once('close', () => resolve(text))) };
}

const adminGet = (path: string, extra = '') =>
  `GET ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${ADMIN_TOKEN}\r\n${extra}connection: close\r\n\r\n`;

function expectEnvelope(body: unknown, code: string) {
  expect(body).toEqual({ error: expect.objectContaining({ code, message: expect.any(String) }) });
}

describe('router- and parser-level errors are in the envelope', () => {
  test('a path parameter longer than the router accepts is 414 invalid_argument', async () => {
    const res = await rawExchange(adminGet(`/v1/admin/images/${'a'.repeat(1000)}`));
    expect(res.status).toBe(414);
    expectEnvelope(res.body, 'invalid_argument');
  });

  test('a path that does not percent-decode is 400 invalid_argument', async () => {
    const res = await rawExchange(adminGet('/v1/admin/images/%E0%A4%A'));
    expect(res.status).toBe(400);
    expectEnvelope(res.body, 'invalid_argument');
  });

  test('a header block over the limit is 431 in the envelope, written before Fastify sees it', async () => {
    const res = await rawExchange(adminGet('/v1/admin/images', `x-big: ${'a'.repeat(64 * 1024)}\r\n`));
    expect(res.status).toBe(431);
    expectEnvelope(res.body, 'invalid_argument');
  });

  test('a request that is not HTTP is 400 in the envelope', async () => {
    const res = await rawExchange('NOT HTTP AT ALL\r\n\r\n');
    expect(res.status).toBe(400);
    expectEnvelope(res.body, 'invalid_argument');
  });

  test('an unknown route is 404 not_found', async () => {
    for (const path of ['/nope', '/v1/tools/no_such_tool', '/v1/admin/nothing']) {
      const res = await raw(h.coordinator.url, path, { method: 'POST', body: '{}', token: ADMIN_TOKEN });
      expect(res.status).toBe(404);
      expectEnvelope(res.body, 'not_found');
    }
  });

  test('an unknown route is answered at its headers, its body never read; the console login reads 8 KiB at most', async () => {
    // Only the headers are sent: an answer that waited for the body would never come.
    const held = await rawExchange(
      'POST /v1/tools/no_such_tool HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 60000\r\nconnection: close\r\n\r\n{',
    );
    expect(held.status).toBe(404);
    expectEnvelope(held.body, 'not_found');
    const login = await raw(h.coordinator.url, '/ui/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: 'x'.repeat(9000) }),
    });
    expect(login.status).toBe(413);
  });
});

describe('bodies', () => {
  const oversized = JSON.stringify({ payload: 'x'.repeat(BODY_LIMIT * 4) });

  test('a body over the limit is a readable 413 payload_too_large (content-length)', async () => {
    const res = await raw(h.coordinator.url, '/v1/tools/create_object', {
      method: 'POST',
      token,
      body: oversized,
    });
    expect(res.status).toBe(413);
    expectEnvelope(res.body, 'payload_too_large');
  });

  test('a chunked body over the limit is a readable 413 payload_too_large', async () => {
    const chunk = new TextEncoder().encode(oversized.slice(0, 16 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= BODY_LIMIT * 4) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const response = await fetch(`${h.coordinator.url}/v1/tools/create_object`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(413);
    expectEnvelope(await response.json(), 'payload_too_large');
  });

  test(`JSON nested deeper than ${MAX_JSON_DEPTH} levels is a 400 naming the field; at the bound it is stored`, async () => {
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    const payload = await raw(h.coordinator.url, '/v1/tools/create_object', {
      method: 'POST',
      token,
      body: `{"payload":${deep(5000)}}`,
    });
    expect(payload.status).toBe(400);
    expectEnvelope(payload.body, 'invalid_argument');
    expect((payload.body as { error: { message: string } }).error.message).toContain('body.payload');
    const input = await raw(h.coordinator.url, '/v1/admin/processes', {
      method: 'POST',
      token: ADMIN_TOKEN,
      body: `{"goal":"deep","input":${deep(5000)}}`,
    });
    expect(input.status).toBe(400);
    expect((input.body as { error: { message: string } }).error.message).toContain('body.input');
    const atBound = await raw(h.coordinator.url, '/v1/tools/create_object', {
      method: 'POST',
      token,
      body: `{"payload":${deep(MAX_JSON_DEPTH)}}`,
    });
    expect(atBound.status).toBe(200);
  });

  test('constructor and prototype keys round-trip as data through create_object and read_object', async () => {
    const payload = { constructor: { prototype: { polluted: true } }, nested: [{ prototype: 1 }] };
    const created = await raw(h.coordinator.url, '/v1/tools/create_object', {
      method: 'POST',
      token,
      body: JSON.stringify({ payload }),
    });
    expect(created.status).toBe(200);
    const { oid } = created.body as { oid: string };
    const read = await raw(h.coordinator.url, '/v1/tools/read_object', {
      method: 'POST',
      token,
      body: JSON.stringify({ oid }),
    });
    expect(read.status).toBe(200);
    expect((read.body as { payload: unknown }).payload).toEqual(payload);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test('a __proto__ key anywhere is refused with a message that says why, and pollutes nothing', async () => {
    for (const body of [
      '{"payload":{"__proto__":{"polluted":true}}}',
      '{"payload":{"a":[{"b":{"__proto__":{"polluted":true}}}]}}',
      '{"__proto__":{"polluted":true},"payload":1}',
    ]) {
      const res = await raw(h.coordinator.url, '/v1/tools/create_object', { method: 'POST', token, body });
      expect(res.status).toBe(400);
      expectEnvelope(res.body, 'invalid_argument');
      const message = (res.body as { error: { message: string } }).error.message;
      expect(message).toContain('__proto__');
      expect(message).not.toContain('not valid JSON');
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('slow clients', () => {
  test('a request timeout above Node’s own (300 s) is accepted', async () => {
    const own = await startHarness({ LIBOS_REQUEST_TIMEOUT_MS: '600000' });
    try {
      expect((await raw(own.coordinator.url, '/healthz')).status).toBe(200);
    } finally {
      await own.stop();
    }
  });

  test('a request still arriving after LIBOS_REQUEST_TIMEOUT_MS is a 408 in the envelope and its connection closes; a long-poll answered later is not cut', async () => {
    const own = await startHarness({ LIBOS_REQUEST_TIMEOUT_MS: '1000', LIBOS_LONG_POLL_MS: '2500' });
    try {
      const root = await own.admin.createProcess({ goal: 'slow clients' });
      const { hostname, port } = new URL(own.coordinator.url);
      const exchange = (write: (socket: net.Socket) => void) =>
        new Promise<{ text: string; ms: number }>((resolve, reject) => {
          const started = Date.now();
          const socket = net.connect(Number(port), hostname, () => write(socket));
          let text = '';
          socket.setEncoding('utf8');
          socket.on('data', (chunk) => {
            text += chunk;
          });
          socket.on('error', reject);
          socket.on('close', () => resolve({ text, ms: Date.now() - started }));
        });
      const head =
        `POST /v1/tools/receive_process_messages HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${root.token}\r\n` +
        'content-type: application/json\r\nconnection: close\r\n';
      const body = JSON.stringify({ channel: 'never' });
      const [trickled, quiet, polled] = await Promise.all([
        // The body a byte every 100 ms, for longer than the timeout.
        exchange((socket) => {
          socket.write(`${head}content-length: ${body.length + 100}\r\n\r\n`);
          const timer = setInterval(() => socket.writable && socket.write(' '), 100);
          socket.once('close', () => clearInterval(timer));
        }),
        // The headers never end.
        exchange((socket) => socket.write(head)),
        // The whole request at once, its answer held by the long-poll past the timeout.
        exchange((socket) => socket.write(`${head}content-length: ${body.length}\r\n\r\n${body}`)),
      ]);
      for (const slow of [trickled, quiet]) {
        expect(slow.text).toMatch(/^HTTP\/1\.1 408 /);
        expectEnvelope(JSON.parse(slow.text.slice(slow.text.indexOf('\r\n\r\n') + 4)), 'invalid_argument');
        expect(slow.ms).toBeLessThan(2_500);
      }
      expect(polled.text).toMatch(/^HTTP\/1\.1 200 /);
      expect(polled.text).toContain('"ready":false');
      expect(polled.ms).toBeGreaterThanOrEqual(2_400);
    } finally {
      await own.stop();
    }
  });
});

describe('calls held at once', () => {
  test('a process over LIBOS_PROCESS_BODY_BYTES_HELD is refused 429 and the coordinator over LIBOS_BODY_BYTES_HELD 503, until answers release them', async () => {
    const BODY = 60_000;
    const own = await startHarness({
      LIBOS_BODY_LIMIT_BYTES: '65536',
      LIBOS_PROCESS_BODY_BYTES_HELD: '100000',
      LIBOS_BODY_BYTES_HELD: '150000',
    });
    try {
      const { hostname, port } = new URL(own.coordinator.url);
      /** A get_process call whose body (`{}` and spaces) is sent all but its last byte, then held. */
      const begin = async (token: string) => {
        const { socket, closed } = await connect(own.coordinator.url);
        socket.write(
          `POST /v1/tools/get_process HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n` +
            `content-type: application/json\r\ncontent-length: ${BODY}\r\nconnection: close\r\n\r\n{}${' '.repeat(BODY - 3)}`,
        );
        // The coordinator counts a body once it has the headers: let it.
        await new Promise((resolve) => setTimeout(resolve, 150));
        return {
          answer: async () => {
            if (socket.writable) socket.write(' ');
            return closed;
          },
          abandon: () => socket.destroy(),
        };
      };
      const status = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      const [a, b, c] = await Promise.all(
        ['a', 'b', 'c'].map(async (goal) => (await own.admin.createProcess({ goal })).token!),
      );

      // One process: a second body would pass its share.
      const a1 = await begin(a!);
      const a2 = await (await begin(a!)).answer();
      expect(status(a2)).toBe(429);
      expectEnvelope(JSON.parse(a2.slice(a2.indexOf('\r\n\r\n') + 4)), 'resource_exhausted');
      expect(a2).toContain('LIBOS_PROCESS_BODY_BYTES_HELD');
      expect(status(await a1.answer())).toBe(200);
      // Answered: its share is free again.
      const a3 = await begin(a!);

      // Two processes hold 120 kB; a third body would pass the total.
      const b1 = await begin(b!);
      const c1 = await (await begin(c!)).answer();
      expect(status(c1)).toBe(503);
      expectEnvelope(JSON.parse(c1.slice(c1.indexOf('\r\n\r\n') + 4)), 'unavailable');
      expect(c1).toContain('LIBOS_BODY_BYTES_HELD');
      // A connection closed before its body arrived frees what it held.
      b1.abandon();
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(status(await (await begin(c!)).answer())).toBe(200);
      expect(status(await a3.answer())).toBe(200);

      // A body pipelined behind a long-poll on one connection, which then closes: its answer never
      // came, and the connection's end frees its share.
      const piped = net.connect(Number(port), hostname);
      await new Promise((resolve) => piped.once('connect', resolve));
      const receive = JSON.stringify({ channel: 'never' });
      const call = (name: string, length: number) =>
        `POST /v1/tools/${name} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${c}\r\n` +
        `content-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;
      piped.write(`${call('receive_process_messages', receive.length)}${receive}`);
      piped.write(`${call('get_process', BODY)}{}${' '.repeat(BODY - 2)}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      piped.destroy();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const c2 = await begin(c!);
      // c2 holds the share now (a second is refused); leaked, the share would refuse c2 itself.
      expect(status(await (await begin(c!)).answer())).toBe(429);
      expect(status(await c2.answer())).toBe(200);
    } finally {
      await own.stop();
    }
  });

  test('a process past LIBOS_PROCESS_CALLS_HELD is refused 429 and the coordinator past LIBOS_CALLS_HELD 503, until answers or closed connections release them', async () => {
    const own = await startHarness({
      LIBOS_PROCESS_CALLS_HELD: '3',
      LIBOS_CALLS_HELD: '5',
      LIBOS_LONG_POLL_MS: '60000',
    });
    try {
      const body = JSON.stringify({ channel: 'never' });
      /** A blocking receive held open by the coordinator (nothing is ever sent on its channel). */
      const hold = async (token: string) => {
        const { socket, closed } = await connect(own.coordinator.url);
        socket.write(
          `POST /v1/tools/receive_process_messages HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n` +
            `content-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
        );
        return { closed, abandon: () => socket.destroy() };
      };
      const status = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      const envelope = (text: string) => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
      const [a, b, c] = await Promise.all(
        ['a', 'b', 'c'].map(async (goal) => (await own.admin.createProcess({ goal })).token!),
      );
      const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

      // One process holds three long-polls; its fourth call (of any tool) is refused at once.
      const held = [await hold(a!), await hold(a!), await hold(a!)];
      await settle();
      const a4 = await (await hold(a!)).closed;
      expect(status(a4)).toBe(429);
      expectEnvelope(envelope(a4), 'resource_exhausted');
      expect(a4).toContain('LIBOS_PROCESS_CALLS_HELD');
      // Another process is not held up by it: its calls pass, up to the coordinator's five.
      const b1 = await hold(b!);
      const b2 = await hold(b!);
      await settle();
      const c1 = await (await hold(c!)).closed;
      expect(status(c1)).toBe(503);
      expectEnvelope(envelope(c1), 'unavailable');
      expect(c1).toContain('LIBOS_CALLS_HELD');
      const metrics = await (await fetch(`${own.coordinator.url}/metrics`)).text();
      expect(metrics).toMatch(/^libos_calls_held 5$/m);
      expect(metrics).toMatch(/^libos_call_refusals_total\{limit="process_calls"\} 1$/m);
      expect(metrics).toMatch(/^libos_call_refusals_total\{limit="calls"\} 1$/m);

      // A connection closed while its long-poll waits frees its place, for its process and in all.
      held[0]!.abandon();
      b1.abandon();
      await settle();
      const a5 = await hold(a!);
      const c2 = await hold(c!);
      await settle();
      expect(await (await fetch(`${own.coordinator.url}/metrics`)).text()).toMatch(/^libos_calls_held 5$/m);
      // Closing the rest frees every place.
      for (const one of [held[1]!, held[2]!, b2, a5, c2]) one.abandon();
      await settle();
      expect(await (await fetch(`${own.coordinator.url}/metrics`)).text()).toMatch(/^libos_calls_held 0$/m);
    } finally {
      await own.stop();
    }
  });
});

describe('connections', () => {
  test('the default limit is the open-files limit less what is kept for Redis and files', () => {
    const limits = (soft: string) =>
      `Limit                     Soft Limit           Hard Limit           Units\nMax open files            ${soft}                20000                files\n`;
    expect(openFilesLimit(limits('20000'))).toBe(20_000);
    expect(openFilesLimit(limits('unlimited'))).toBeUndefined();
    expect(connectionLimit(undefined, 20_000)).toBe(20_000 - RESERVED_DESCRIPTORS);
    expect(connectionLimit(undefined, 512)).toBe(64);
    expect(connectionLimit(300, 20_000)).toBe(300);
    expect(connectionLimit(undefined, undefined)).toBeUndefined();
    // This process's own (Node raised it to the hard limit as it started).
    expect(openFilesLimit()).toBeGreaterThan(0);
  });

  test('a connection past LIBOS_MAX_CONNECTIONS is closed as it is accepted; the ones held are served', async () => {
    const own = await startHarness({ LIBOS_MAX_CONNECTIONS: '4' });
    try {
      const open = () => connect(own.coordinator.url);
      const held = await Promise.all([open(), open(), open(), open()]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      // The fifth is accepted by the kernel and closed by the server without a byte.
      const fifth = await open();
      fifth.socket.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n');
      expect(await fifth.closed).toBe('');
      // A held connection is still served.
      held[0]!.socket.write('GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
      expect(await held[0]!.closed).toMatch(/^HTTP\/1\.1 200/);
      // Its place is free again.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const next = await open();
      next.socket.write('GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
      expect(await next.closed).toMatch(/^HTTP\/1\.1 200/);
      for (const one of held) one.socket.destroy();
    } finally {
      await own.stop();
    }
  });
});
