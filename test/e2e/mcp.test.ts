import { fileURLToPath } from 'node:url';
import { tsChildLaunch } from '@libos/examples';
import { TOOL_NAMES, TOOLS } from '@libos/protocol';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  asSelf,
  CLI_SOURCE,
  Cluster,
  isAlive,
  NO_USAGE,
  READ_REQUEST,
  shImage,
  writeResult,
} from '../src/index.js';

let cluster: Cluster;

beforeAll(async () => {
  cluster = await Cluster.start({ workers: 1 });
  await cluster.admin.putImage('echo', { ...tsChildLaunch('echo'), deadline_ms: 30_000 });
  // Receives one `ping` from its parent and answers it on `pong`, acting as itself with the
  // LIBOS_URL and LIBOS_TOKEN its worker gave it; then completes naming the message it answered.
  await cluster.admin.putImage('replier', {
    ...shImage(
      [
        READ_REQUEST,
        `ping=$(${asSelf('receive_process_messages', '{"channel":"ping"}')})`,
        `mid=$(printf '%s' "$ping" | sed 's/.*"message_id":"\\([^"]*\\)".*/\\1/')`,
        `${asSelf('send_process_message', '{"to":"parent","channel":"pong","reply_to":"%s","body":"pong"}', '"$mid"')} > /dev/null`,
        writeResult(`"status":"completed","output":{"answered":"%s"},${NO_USAGE},"steps":1`, '"$mid"'),
      ].join('; '),
    ),
    deadline_ms: 30_000,
  });
});
afterAll(async () => {
  expect(await cluster?.stop()).toEqual([]);
});

/** `libos mcp` as a child process speaking MCP on stdio, acting as a fresh root of the cluster. */
async function connect() {
  const root = await cluster.root('driven by an MCP client');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', '--conditions=@libos/source', CLI_SOURCE, 'mcp'],
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: {
      PATH: process.env.PATH ?? '',
      LIBOS_URL: cluster.url,
      LIBOS_PID: root.pid,
      LIBOS_TOKEN: root.token,
    },
    stderr: 'inherit',
  });
  const client = new Client({ name: 'libos-e2e', version: '0.0.0' });
  await client.connect(transport);
  return { client, transport, root };
}

async function call(client: Client, name: string, args: Record<string, unknown>) {
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 });
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  return result.structuredContent as Record<string, unknown>;
}

describe('libos mcp', () => {
  it('lists the protocol tools with their schemas, spawns, waits, reads a result, and exits cleanly', async () => {
    const { client, transport, root } = await connect();
    const serverPid = transport.pid;
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(TOOL_NAMES);
      for (const tool of tools) {
        const { $schema: _, ...input } = z.toJSONSchema(TOOLS[tool.name as keyof typeof TOOLS].args, {
          io: 'input',
          unrepresentable: 'any',
        });
        expect(tool.inputSchema).toEqual(input);
      }

      const child = await call(client, 'spawn_child_process', {
        goal: 'echo through MCP',
        image: 'echo',
        input: { question: 'who am I' },
      });
      const done = await call(client, 'wait_child_process', { child_pid: child.pid });
      expect(done).toMatchObject({ ready: true, status: 'exited', outcome: { type: 'completed' } });
      const result = await call(client, 'read_object', { oid: done.result_oid });
      expect(result.payload).toMatchObject({
        goal: 'echo through MCP',
        pid: child.pid,
        parent_pid: root.pid,
        input: { question: 'who am I' },
      });
    } finally {
      const closing = Date.now();
      await client.close();
      // The server ends on its own when its stdin closes (the SDK would SIGTERM it after 2 s).
      expect(Date.now() - closing).toBeLessThan(1_900);
      expect(serverPid !== null && isAlive(serverPid)).toBe(false);
    }
  });

  it('sends a message to a child, which replies through its own env, and receives the reply', async () => {
    const { client } = await connect();
    try {
      const child = await call(client, 'spawn_child_process', { goal: 'answer a ping', image: 'replier' });
      const sent = await call(client, 'send_process_message', {
        to: child.pid,
        channel: 'ping',
        body: 'ping',
      });
      const received = await call(client, 'receive_process_messages', { channel: 'pong' });
      expect(received).toMatchObject({
        ready: true,
        messages: [{ sender: child.pid, reply_to: sent.message_id, body: 'pong' }],
      });
      const done = await call(client, 'wait_child_process', { child_pid: child.pid });
      expect(done).toMatchObject({ status: 'exited' });
      expect((await call(client, 'read_object', { oid: done.result_oid })).payload).toEqual({
        answered: sent.message_id,
      });
    } finally {
      await client.close();
    }
  });

  it('closing the client while a blocking wait is in flight ends the server without an answer', async () => {
    const { client, transport } = await connect();
    const serverPid = transport.pid;
    const child = await call(client, 'spawn_child_process', {
      goal: 'waits for a ping that never comes',
      image: 'replier',
    });
    const waiting = client.callTool({ name: 'wait_child_process', arguments: { child_pid: child.pid } });
    waiting.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const closing = Date.now();
    await client.close();
    expect(Date.now() - closing).toBeLessThan(1_900);
    expect(serverPid !== null && isAlive(serverPid)).toBe(false);
    await expect(waiting).rejects.toThrow(/Connection closed/);
    // The child itself is untouched; its parent is the root, which an operator may still end.
    await cluster.admin.signalProcess(String(child.pid), 'terminate');
  });
});
