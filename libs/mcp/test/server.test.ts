import { PassThrough } from 'node:stream';
import { coordinatorConfigSchema, type RunningCoordinator, startCoordinator } from '@libos/coordinator';
import { TOOL_NAMES, TOOLS, type ToolName } from '@libos/protocol';
import { AdminClient, ProcessClient } from '@libos/sdk';
import { startRedis, type TestRedis } from '@libos/testkit';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createMcpServer, END_GRACE_MS, serveMcpStdio, toolDescription } from '../src/index.js';

const ADMIN_TOKEN = 'mcp-test-admin-token-0123456789';

let redis: TestRedis;
let coordinator: RunningCoordinator;
let admin: AdminClient;

beforeAll(async () => {
  redis = await startRedis();
  const config = coordinatorConfigSchema.parse({
    LIBOS_REDIS_URL: redis.url,
    LIBOS_ADMIN_TOKEN: ADMIN_TOKEN,
    LIBOS_PORT: '0',
    LIBOS_LONG_POLL_MS: '300',
  });
  coordinator = await startCoordinator(config, { logger: pino({ level: 'silent' }) });
  admin = new AdminClient({ url: coordinator.url, adminToken: ADMIN_TOKEN });
  // No worker runs here: spawned children stay runnable, which is what these tests need.
  await admin.putImage('idle', { command: 'true', args: ['{result_file}'] });
});

afterAll(async () => {
  await coordinator?.close();
  await redis?.stop();
});

/** A caller-driven root, and an MCP client connected in memory to a server acting as it. */
async function connect(capabilities?: Parameters<AdminClient['createProcess']>[0]['capabilities']) {
  const root = await admin.createProcess({
    goal: 'mcp test root',
    ...(capabilities === undefined ? {} : { capabilities }),
  });
  const server = createMcpServer(new ProcessClient({ url: coordinator.url, token: root.token ?? '' }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'mcp-test', version: '0.0.0' });
  await client.connect(clientSide);
  return { pid: root.pid, token: root.token ?? '', client, close: () => client.close() };
}

/** The structured answer of a successful call (the client has checked it against the output schema). */
async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  return result.structuredContent as Record<string, unknown>;
}

/** The libos error of a refused call. */
async function refusal(client: Client, name: string, args: Record<string, unknown>) {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError).toBe(true);
  const [content] = result.content as { type: string; text: string }[];
  return (JSON.parse(content?.text ?? '{}') as { error: { code: string; details?: { reason?: string } } })
    .error;
}

describe('the libos MCP server', () => {
  it('lists every tool with input and output schemas generated from the protocol', async () => {
    const { client, close } = await connect();
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(TOOL_NAMES);
      for (const tool of tools) {
        const spec = TOOLS[tool.name as keyof typeof TOOLS];
        const { $schema: _, ...input } = z.toJSONSchema(spec.args, { io: 'input', unrepresentable: 'any' });
        expect(tool.inputSchema).toEqual(input);
        expect(tool.description).toBe(toolDescription(tool.name as ToolName));
        expect(tool.description).toContain(spec.description);
        expect(tool.outputSchema?.type).toBe('object');
        expect(Object.keys(tool.outputSchema?.properties ?? {})).toContain('notices');
      }
      expect(tools.find((t) => t.name === 'get_process')?.annotations).toEqual({ readOnlyHint: true });
      expect(tools.find((t) => t.name === 'signal_child_process')?.annotations?.destructiveHint).toBe(true);
    } finally {
      await close();
    }
  });

  it('lists only the tools the process may use: no spawn or child tools without process:spawn', async () => {
    const free = await connect(); // the default root grants: process:spawn (use) and image:* (read)
    const bound = await connect([{ resource: 'image:*', rights: ['read'] }]);
    const expiry = Date.now() + 3_000;
    const expired = await connect([
      { resource: 'process:*', rights: ['*'], expires_at: new Date(expiry).toISOString() },
      { resource: 'image:idle', rights: ['read'] },
    ]);
    try {
      expect((await free.client.listTools()).tools.map((t) => t.name)).toEqual(TOOL_NAMES);
      const without = TOOL_NAMES.filter(
        (name) =>
          ![
            'spawn_child_process',
            'fork_child_process',
            'spawn_children',
            'list_child_processes',
            'wait_child_process',
            'wait_children',
            'signal_child_process',
            'merge_child_memory',
          ].includes(name),
      );
      expect((await bound.client.listTools()).tools.map((t) => t.name)).toEqual(without);
      // What is not listed is what the kernel refuses (it still authorises every call).
      expect(await refusal(bound.client, 'spawn_child_process', { goal: 'no', image: 'idle' })).toMatchObject(
        {
          code: 'permission_denied',
          details: { reason: 'missing_capability' },
        },
      );
      // A wildcard grant covers process:spawn; once it has expired, a process with a child keeps
      // the child tools (there is a child to wait for), not the spawn tools.
      await call(expired.client, 'spawn_child_process', { goal: 'before expiry', image: 'idle' });
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiry - Date.now() + 50)));
      const late = createMcpServer(new ProcessClient({ url: coordinator.url, token: expired.token }));
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await late.connect(serverSide);
      const client = new Client({ name: 'mcp-test', version: '0.0.0' });
      await client.connect(clientSide);
      const names = (await client.listTools()).tools.map((t) => t.name);
      await client.close();
      expect(names).toContain('wait_child_process');
      expect(names).toContain('wait_children');
      expect(names).not.toContain('spawn_child_process');
      expect(names).not.toContain('spawn_children');
      expect(names).not.toContain('fork_child_process');
    } finally {
      await Promise.all([free.close(), bound.close(), expired.close()]);
    }
  });

  it('acts as the process of its token: objects it creates are owned by that process', async () => {
    const { client, pid, close } = await connect();
    try {
      expect(await call(client, 'get_process')).toMatchObject({ pid, status: 'running', driver: 'caller' });
      const created = await call(client, 'create_object', { payload: { note: 'hello' } });
      expect(await call(client, 'read_object', { oid: created.oid })).toMatchObject({
        payload: { note: 'hello' },
        owner: pid,
      });
      const child = await call(client, 'spawn_child_process', { goal: 'stay queued', image: 'idle' });
      expect(child).toMatchObject({ status: 'runnable', image: 'idle' });
      expect(await call(client, 'wait_child_process', { child_pid: child.pid, block: false })).toMatchObject({
        ready: false,
        status: 'runnable',
      });
    } finally {
      await close();
    }
  });

  it('turns refusals into tool errors carrying the libos code and reason', async () => {
    const { client, close } = await connect();
    try {
      expect(await refusal(client, 'spawn_child_process', { image: 'idle' })).toMatchObject({
        code: 'invalid_argument',
      });
      const other = await admin.createProcess({ goal: 'not a child' });
      const notChild = await refusal(client, 'wait_child_process', { child_pid: other.pid, block: false });
      expect(notChild).toMatchObject({ code: 'not_found' }); // another tree is invisible
      const escalation = await refusal(client, 'spawn_child_process', {
        goal: 'x',
        image: 'idle',
        inherit_capabilities: [{ resource: 'fs:/etc', rights: ['write'] }],
      });
      expect(escalation).toMatchObject({ code: 'permission_denied', details: { reason: 'not_held' } });
      expect(
        await refusal(client, 'spawn_child_process', { goal: 'x', image: 'no-such-image' }),
      ).toMatchObject({
        code: 'not_found',
      });
    } finally {
      await close();
    }
  });

  it('answers an unknown tool with a protocol error, not a tool result', async () => {
    const { client, close } = await connect();
    try {
      await expect(client.callTool({ name: 'format_disk', arguments: {} })).rejects.toThrow(
        /no tool named format_disk/,
      );
    } finally {
      await close();
    }
  });

  it('carries messages and the notices the coordinator attaches', async () => {
    const { client, close } = await connect();
    try {
      const sent = await call(client, 'send_process_message', { to: 'self', channel: 'memo', body: 'ping' });
      const noticed = await call(client, 'get_process');
      expect(noticed.notices).toEqual([
        expect.objectContaining({ kind: 'normal', message_ids: [sent.message_id] }),
      ]);
      const received = await call(client, 'receive_process_messages', { channel: 'memo' });
      expect(received).toMatchObject({
        ready: true,
        messages: [{ message_id: sent.message_id, body: 'ping' }],
      });
    } finally {
      await close();
    }
  });

  it('re-asks a blocking wait across long-poll windows until the child ends', async () => {
    const { client, close } = await connect();
    try {
      const child = await call(client, 'spawn_child_process', { goal: 'cancelled later', image: 'idle' });
      const waiting = call(client, 'wait_child_process', { child_pid: child.pid });
      await new Promise((resolve) => setTimeout(resolve, 800)); // more than two 300 ms windows
      await call(client, 'signal_child_process', { child_pid: child.pid, signal: 'cancel' });
      expect(await waiting).toMatchObject({ ready: true, status: 'killed', outcome: { type: 'killed' } });
    } finally {
      await close();
    }
  });

  it('spawns a batch with spawn_children and re-asks wait_children across windows until one ends', async () => {
    const { client, close } = await connect();
    try {
      const spawned = await call(client, 'spawn_children', {
        children: [
          { goal: 'first', image: 'idle', input: { n: 1 } },
          { goal: 'second', image: 'idle', input: { n: 2 } },
          { goal: 'third', image: 'idle', input: { n: 3 } },
        ],
      });
      const pids = (spawned.children as { pid: string; status: string }[]).map((c) => c.pid);
      expect(pids).toHaveLength(3);
      const waiting = call(client, 'wait_children', { child_pids: pids });
      await new Promise((resolve) => setTimeout(resolve, 800)); // more than two 300 ms windows
      await call(client, 'signal_child_process', { child_pid: pids[1], signal: 'cancel' });
      expect(await waiting).toMatchObject({ ready: true, mode: 'any', ended_pids: [pids[1]] });
      const refused = await refusal(client, 'spawn_children', {
        children: [
          { goal: 'fine', image: 'idle' },
          { goal: 'bad', image: 'no-such-image' },
        ],
      });
      expect(refused).toMatchObject({ code: 'not_found', details: { reason: 'unknown_image', index: 1 } });
    } finally {
      await close();
    }
  });

  it('aborts a blocking wait when the client cancels the call', async () => {
    const { client, close } = await connect();
    try {
      const child = await call(client, 'spawn_child_process', { goal: 'never runs', image: 'idle' });
      const cancel = new AbortController();
      const waiting = client.callTool(
        { name: 'wait_child_process', arguments: { child_pid: child.pid } },
        undefined,
        {
          signal: cancel.signal,
        },
      );
      waiting.catch(() => undefined);
      const openPolls = async () => (await coordinator.metrics.openLongPolls.get()).values[0]?.value ?? 0;
      await expect.poll(openPolls).toBe(1);
      cancel.abort();
      await expect(waiting).rejects.toThrow();
      // Asked again, the wait would hold a long-poll nearly all the time; cancelled, none for good.
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (let i = 0; i < 12; i++) {
        expect(await openPolls()).toBe(0);
        await new Promise((resolve) => setTimeout(resolve, 60));
      }
    } finally {
      await close();
    }
  });
});

/** `serveMcpStdio` as `root`, over pipes of its own, initialized (answer id 1); its output lines. */
function stdioSession(root: { pid: string; token?: string | null }) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const lines: string[] = [];
  stdout.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  const env = { LIBOS_URL: coordinator.url, LIBOS_PID: root.pid, LIBOS_TOKEN: root.token ?? '' };
  const serving = serveMcpStdio(env, { stdin, stdout });
  const send = (message: object) => stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  send({
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
  });
  send({ method: 'notifications/initialized' });
  return { stdin, lines, serving, send };
}

describe('serveMcpStdio', () => {
  it('needs the LIBOS_* identity of a process', async () => {
    await expect(serveMcpStdio({})).rejects.toThrow(/LIBOS_URL, LIBOS_PID, LIBOS_TOKEN/);
  });

  it('ends when its input ends, aborting a blocking wait in flight', async () => {
    const root = await admin.createProcess({ goal: 'stdio root' });
    const child = await new ProcessClient({ url: coordinator.url, token: root.token ?? '' }).spawn({
      goal: 'never runs',
      image: 'idle',
    });
    const { stdin, lines, serving, send } = stdioSession(root);
    send({
      id: 2,
      method: 'tools/call',
      params: { name: 'wait_child_process', arguments: { child_pid: child.pid } },
    });
    await new Promise((resolve) => setTimeout(resolve, 400));
    const ended = Date.now();
    stdin.end();
    await serving;
    // the grace for requests already sent, then the wait is aborted
    expect(Date.now() - ended).toBeGreaterThanOrEqual(END_GRACE_MS - 50);
    expect(Date.now() - ended).toBeLessThan(END_GRACE_MS + 300);
    expect(lines.map((line) => JSON.parse(line).id)).toEqual([1]); // the wait never answered
  });

  it('answers what a client piped before closing its input, then ends', async () => {
    const root = await admin.createProcess({ goal: 'piped root' });
    const { stdin, lines, serving, send } = stdioSession(root);
    send({ id: 2, method: 'tools/list' });
    send({ id: 3, method: 'tools/call', params: { name: 'get_process', arguments: {} } });
    const ended = Date.now();
    stdin.end();
    await serving;
    expect(Date.now() - ended).toBeLessThan(END_GRACE_MS);
    const answers = lines.map((line) => JSON.parse(line) as { id: number; result?: { isError?: boolean } });
    expect(answers.map((answer) => answer.id).sort()).toEqual([1, 2, 3]);
    expect(answers.find((answer) => answer.id === 3)?.result?.isError).not.toBe(true);
  });
});
