import { PassThrough, type Readable, type Writable } from 'node:stream';
import { PID_PATTERN } from '@libos/protocol';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { PID_PATTERN_SOURCE, PROTOCOL_VERSIONS, serveMcpFast, serveMcpStdio } from '../src/index.js';

const ENV = { LIBOS_URL: 'http://127.0.0.1:9', LIBOS_PID: 'pabcdef', LIBOS_TOKEN: 'token' };

/** Lines written to a stream, as they arrive. */
function lines(stream: PassThrough) {
  const seen: Record<string, unknown>[] = [];
  let buffer = '';
  stream.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let newline = buffer.indexOf('\n');
    while (newline !== -1) {
      seen.push(JSON.parse(buffer.slice(0, newline)) as Record<string, unknown>);
      buffer = buffer.slice(newline + 1);
      newline = buffer.indexOf('\n');
    }
  });
  return {
    seen,
    async next(count: number) {
      while (seen.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
      return seen[count - 1];
    },
  };
}

const initialize = (id: number, protocolVersion: string) =>
  `${JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 't', version: '1' } } })}\n`;

/** The SDK server's own answer to `initialize`. */
async function sdkAnswer(protocolVersion: string) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const out = lines(stdout);
  const served = serveMcpStdio(ENV, { stdin, stdout });
  stdin.write(initialize(1, protocolVersion));
  const answer = await out.next(1);
  stdin.end();
  await served;
  return answer;
}

describe('the lean entry', () => {
  it('knows the SDK protocol versions and the protocol pid pattern', () => {
    expect([...PROTOCOL_VERSIONS]).toEqual(SUPPORTED_PROTOCOL_VERSIONS);
    expect(PID_PATTERN_SOURCE).toBe(PID_PATTERN.source);
  });

  it('answers initialize before the server has loaded, exactly as the server would, then hands over', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const out = lines(stdout);
    let release = () => {};
    const loaded = new Promise<void>((resolve) => {
      release = resolve;
    });
    const served = serveMcpFast({
      env: ENV,
      stdin,
      stdout,
      load: async () => {
        await loaded;
        return (env: NodeJS.ProcessEnv, io: { stdin: Readable; stdout: Writable }) => serveMcpStdio(env, io);
      },
    });
    stdin.write(initialize(1, '2025-06-18'));
    const early = await out.next(1);
    expect(early).toEqual(await sdkAnswer('2025-06-18'));
    stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(out.seen).toHaveLength(1); // nothing else is answered before the server is there
    release();
    const tools = await out.next(2);
    expect(tools?.id).toBe(2);
    const listed = tools?.result as { tools: unknown[] } | undefined;
    expect(listed?.tools.length).toBeGreaterThan(10);
    stdin.end();
    await served;
    expect(out.seen.map((message) => message.id)).toEqual([1, 2]); // the server's own initialize answer was dropped
  });

  it('starts loading the server only once initialize is answered (or another message comes first)', async () => {
    for (const first of [
      initialize(1, '2025-06-18'),
      `${JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' })}\n`,
    ]) {
      const stdin = new PassThrough();
      const stdout = new PassThrough();
      const out = lines(stdout);
      let loads = 0;
      const served = serveMcpFast({
        env: ENV,
        stdin,
        stdout,
        load: async () => {
          loads += 1;
          return (env: NodeJS.ProcessEnv, io: { stdin: Readable; stdout: Writable }) =>
            serveMcpStdio(env, io);
        },
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(loads).toBe(0); // nothing runs before the client speaks: its first answer waits for nothing
      stdin.write(first);
      await out.next(1);
      while (loads === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      stdin.end();
      await served;
      expect(loads).toBe(1);
    }
  });

  it('an unknown protocol version gets the newest, as from the SDK', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const out = lines(stdout);
    const served = serveMcpFast({ env: ENV, stdin, stdout });
    stdin.write(initialize(7, '1999-01-01'));
    expect(await out.next(1)).toEqual({ ...(await sdkAnswer('1999-01-01')), id: 7 });
    stdin.end();
    await served;
  });

  it('refuses a bad environment before answering anything', async () => {
    const stdout = new PassThrough();
    const out = lines(stdout);
    await expect(
      serveMcpFast({
        env: { ...ENV, LIBOS_PID: 'not-a-pid', LIBOS_URL: 'ftp://x' },
        stdin: new PassThrough(),
        stdout,
      }),
    ).rejects.toThrow('fromEnv: LIBOS_URL, LIBOS_PID missing or invalid');
    expect(out.seen).toEqual([]);
  });
});
