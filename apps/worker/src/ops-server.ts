import { createServer, type Server } from 'node:http';
import type { IsolationReport } from '@libos/sandbox';
import { Counter, Gauge, Registry } from 'prom-client';

/** The worker's Prometheus metrics: what it enforces on its children, what it runs. */
export function createWorkerMetrics(isolation: IsolationReport, running: () => number) {
  const registry = new Registry();
  const level = new Gauge({
    name: 'libos_worker_isolation_level',
    help: 'The isolation this worker enforces on its children (1 for its level: strict, partial or none)',
    labelNames: ['level'],
    registers: [registry],
  });
  level.set({ level: isolation.level }, 1);
  const feature = new Gauge({
    name: 'libos_worker_isolation',
    help: 'Each containment feature: 1 enforced, 0 not (uid, namespaces, cgroup_memory, cgroup_pids, cgroup_cpu, freeze, rlimits, seccomp)',
    labelNames: ['feature'],
    registers: [registry],
  });
  const features: Record<string, boolean> = {
    uid: isolation.uid,
    namespaces: isolation.namespaces,
    cgroup_memory: isolation.cgroupMemory,
    cgroup_pids: isolation.cgroupPids,
    cgroup_cpu: isolation.cgroupCpu,
    freeze: isolation.freeze,
    rlimits: isolation.rlimits,
    seccomp: isolation.seccomp,
  };
  for (const [name, on] of Object.entries(features)) feature.set({ feature: name }, on ? 1 : 0);
  new Gauge({
    name: 'libos_worker_running_children',
    help: 'Children this worker runs now',
    registers: [registry],
    collect() {
      this.set(running());
    },
  });
  const watchdogKills = new Counter({
    name: 'libos_worker_watchdog_kills_total',
    help: 'Children killed by the watchdog because their lease was not renewed in time',
    registers: [registry],
  });
  return { registry, watchdogKills };
}

export type WorkerMetrics = ReturnType<typeof createWorkerMetrics>;

/**
 * What the ops server gives its clients. Probes and scrapes need few connections, each answered
 * at once; children on the worker's host can reach the port too (`network: host`), and must not
 * hold the worker's descriptors, which its launches and Redis need.
 */
export const OPS_LIMITS = { connections: 32, requestMs: 10_000 };

/** `/metrics` and `/healthz` on `host:port` (for probes and scrapes; off unless a port is set). */
export async function startOpsServer(
  metrics: WorkerMetrics,
  host: string,
  port: number,
  limits = OPS_LIMITS,
): Promise<Server> {
  const timeouts = {
    requestTimeout: limits.requestMs,
    headersTimeout: limits.requestMs,
    connectionsCheckingInterval: Math.ceil(limits.requestMs / 4),
  };
  const server = createServer(timeouts, (request, response) => {
    if (request.url === '/healthz') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (request.url === '/metrics') {
      metrics.registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        () => response.writeHead(500).end(),
      );
      return;
    }
    response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"not_found"}}');
  });
  // One past it is closed as it is accepted.
  server.maxConnections = limits.connections;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
