import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The coordinator's Prometheus metrics. Gauges that need Redis are filled at scrape time. */
export function createMetrics() {
  const registry = new Registry();
  const processesByStatus = new Gauge({
    name: 'libos_processes',
    help: 'Processes by status (from the kernel index)',
    labelNames: ['status'],
    registers: [registry],
  });
  const queueDepth = new Gauge({
    name: 'libos_queue_jobs',
    help: 'Launch jobs by pool and state',
    labelNames: ['pool', 'state'],
    registers: [registry],
  });
  const launches = new Counter({
    name: 'libos_launches_total',
    help: 'Launch jobs enqueued by this coordinator (a resume launches a new attempt)',
    labelNames: ['pool', 'attempt'],
    registers: [registry],
  });
  const completions = new Gauge({
    name: 'libos_completions',
    help: 'Worker completions by outcome type, cluster-wide (from Redis)',
    labelNames: ['type'],
    registers: [registry],
  });
  const wakeLatency = new Histogram({
    name: 'libos_wake_latency_seconds',
    help: 'From a terminal transition to this coordinator’s waiters being woken',
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
    registers: [registry],
  });
  const openLongPolls = new Gauge({
    name: 'libos_long_polls_open',
    help: 'Blocking waits and receives held open now',
    registers: [registry],
  });
  const callsHeld = new Gauge({
    name: 'libos_calls_held',
    help: 'Tool calls in flight on this coordinator (at most LIBOS_CALLS_HELD)',
    registers: [registry],
  });
  const callRefusals = new Counter({
    name: 'libos_call_refusals_total',
    help: 'Tool calls refused at their headers by a limit on calls in flight (process_calls, process_body_bytes: 429; calls, body_bytes: 503)',
    labelNames: ['limit'],
    registers: [registry],
  });
  const redisUsedMemory = new Gauge({
    name: 'libos_redis_used_memory_bytes',
    help: 'Redis used_memory at the memory guard’s last reading',
    registers: [registry],
  });
  const redisMaxMemory = new Gauge({
    name: 'libos_redis_maxmemory_bytes',
    help: 'Redis maxmemory (0: none) at the memory guard’s last reading',
    registers: [registry],
  });
  const memoryGuard = new Gauge({
    name: 'libos_redis_memory_guard',
    help: '1 while new work is refused because Redis memory is above the high-water mark',
    registers: [registry],
  });
  const memoryRefusals = new Counter({
    name: 'libos_redis_memory_refusals_total',
    help: 'Requests for new work this coordinator refused for Redis memory',
    registers: [registry],
  });
  const gcDeleted = new Counter({
    name: 'libos_gc_deleted_total',
    help: 'Processes deleted by this coordinator’s retention sweeps and operator deletes',
    registers: [registry],
  });
  return {
    registry,
    processesByStatus,
    queueDepth,
    launches,
    completions,
    wakeLatency,
    openLongPolls,
    callsHeld,
    callRefusals,
    redisUsedMemory,
    redisMaxMemory,
    memoryGuard,
    memoryRefusals,
    gcDeleted,
  };
}
export type Metrics = ReturnType<typeof createMetrics>;
