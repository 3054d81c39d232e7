import { createConnection } from 'node:net';
import { NO_ISOLATION } from '@libos/sandbox';
import { freePort } from '@libos/testkit';
import { describe, expect, it } from 'vitest';
import { createWorkerMetrics, startOpsServer } from '../src/ops-server.js';
import { useHarness } from './helpers.js';

const h = useHarness();

describe('the worker’s /metrics and /healthz', () => {
  it('say what it enforces on its children, per feature, and answer probes', async () => {
    const port = await freePort();
    const worker = await h.startWorker({ LIBOS_WORKER_PORT: String(port) });
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const report = worker.isolation;
    expect(text).toContain(`libos_worker_isolation_level{level="${report.level}"} 1`);
    expect(text).toContain(`libos_worker_isolation{feature="uid"} ${report.uid ? 1 : 0}`);
    expect(text).toContain(`libos_worker_isolation{feature="namespaces"} ${report.namespaces ? 1 : 0}`);
    expect(text).toContain(`libos_worker_isolation{feature="cgroup_pids"} ${report.cgroupPids ? 1 : 0}`);
    expect(text).toContain('libos_worker_running_children 0');
    expect(text).toContain('libos_worker_watchdog_kills_total 0');
    expect((await fetch(`http://127.0.0.1:${port}/nothing`)).status).toBe(404);
  });

  it('a client gone quiet mid-request does not hold the worker’s close', async () => {
    const port = await freePort();
    const worker = await h.startWorker({ LIBOS_WORKER_PORT: String(port) });
    const socket = createConnection({ host: '127.0.0.1', port });
    await new Promise((resolve) => socket.once('connect', resolve));
    const ended = new Promise((resolve) => socket.once('close', resolve));
    socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n'); // the headers never end
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = Date.now();
    await worker.close();
    // Node's own close waited for Node's header timeout (over a minute).
    expect(Date.now() - started).toBeLessThan(5_000);
    await ended;
  });

  it('holds at most its connections, each only until its request is due', async () => {
    const port = await freePort();
    const metrics = createWorkerMetrics(NO_ISOLATION, () => 0);
    const server = await startOpsServer(metrics, '127.0.0.1', port, { connections: 2, requestMs: 400 });
    try {
      const open = async () => {
        const socket = createConnection({ host: '127.0.0.1', port });
        await new Promise((resolve) => socket.once('connect', resolve));
        let text = '';
        socket.setEncoding('utf8').on('data', (chunk) => {
          text += chunk;
        });
        socket.on('error', () => undefined);
        const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(text)));
        return { socket, closed };
      };
      const held = [await open(), await open()];
      await new Promise((resolve) => setTimeout(resolve, 100));
      const third = await open();
      third.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(await third.closed).toBe(''); // closed as it was accepted
      // The two held send nothing: each is answered 408 and closed once its request is due.
      const started = Date.now();
      for (const one of held) expect(await one.closed).toMatch(/^HTTP\/1\.1 408/);
      expect(Date.now() - started).toBeLessThan(2_000);
      const fresh = await open();
      fresh.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect(await fresh.closed).toMatch(/^HTTP\/1\.1 200/);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('refuses to start in strict mode when a protection cannot be had, naming it', async () => {
    // A bwrap that does not exist: the namespaces cannot be enforced.
    await expect(
      h.startWorker({ LIBOS_ISOLATION: 'strict', LIBOS_SANDBOX_BWRAP: '/nonexistent/bwrap' }),
    ).rejects.toThrow(
      /isolation strict cannot be enforced on this host: .*namespaces: \/nonexistent\/bwrap cannot run/,
    );
  });
});
