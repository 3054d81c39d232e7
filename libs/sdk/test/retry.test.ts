import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LibosError, ProcessClient } from '../src/index.js';

// A real HTTP server standing in for a coordinator behind a load balancer whose first answers are
// 503 (a coordinator died mid-request, or Redis is failing over): which calls the SDK asks again.
let server: Server;
let url: string;
const seen: string[] = [];
let failuresLeft = 0;

beforeAll(async () => {
  server = createServer((request, response) => {
    seen.push(request.url ?? '');
    request.resume();
    request.on('end', () => {
      response.setHeader('content-type', 'application/json');
      if (failuresLeft > 0) {
        failuresLeft -= 1;
        response.statusCode = 503;
        response.end(JSON.stringify({ error: { code: 'unavailable', message: 'coordinator going away' } }));
        return;
      }
      response.end(JSON.stringify({ children: [] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe('transparent retries', () => {
  it('asks a read again after 503s and answers it', async () => {
    seen.length = 0;
    failuresLeft = 2;
    const client = new ProcessClient({ url, token: 'pabcd.secretsecretsecret' });
    expect(await client.listChildren()).toEqual({ children: [] });
    expect(seen).toEqual(Array(3).fill('/v1/tools/list_child_processes'));
  });

  it('gives up on a read after its bounded tries', async () => {
    seen.length = 0;
    failuresLeft = 100;
    const client = new ProcessClient({ url, token: 'pabcd.secretsecretsecret' });
    await expect(client.listChildren()).rejects.toMatchObject({ code: 'unavailable' });
    expect(seen).toHaveLength(7);
    failuresLeft = 0;
  });

  it('never sends a spawn twice: a 503 reaches the caller (the API has no idempotency key)', async () => {
    seen.length = 0;
    failuresLeft = 1;
    const client = new ProcessClient({ url, token: 'pabcd.secretsecretsecret' });
    const refused = await client.spawn({ goal: 'once' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LibosError);
    expect((refused as LibosError).code).toBe('unavailable');
    expect(seen).toEqual(['/v1/tools/spawn_child_process']);
  });
});
