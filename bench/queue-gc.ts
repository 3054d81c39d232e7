// The young-generation collections of a bare BullMQ worker, without libos: the queue library's
// own share of what bench/gc-pauses.ts sees in a libos worker. This process starts a private
// redis-server, then a worker process (this file, `--role worker`: one BullMQ Worker with the
// options apps/worker gives its launch queues and a processor that returns at once), adds
// `--jobs` jobs one at a time `--interval-ms` apart (the coordinator's job options), and reads
// the worker's collections (`--trace-gc-nvp`, from `--settle-s` after it is ready, so its
// start-up is left out). `--v8-flags` are set in the worker first (`--no-opt` keeps every
// function out of the optimising compiler): the bytes a scavenge promotes depend on it.
//   node --import tsx --conditions=@libos/source bench/queue-gc.ts [--jobs 3000]
//   [--interval-ms 12] [--concurrency 4] [--settle-s 2] [--v8-flags=--no-opt]
// Prints each scavenge's promoted KiB and pause in order, and a summary line.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { startRedis } from '@libos/testkit';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { collections } from './lib/gc-log.js';
import { quantile } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    role: { type: 'string', default: 'main' },
    url: { type: 'string' },
    jobs: { type: 'string', default: '3000' },
    'interval-ms': { type: 'string', default: '12' },
    concurrency: { type: 'string', default: '4' },
    'settle-s': { type: 'string', default: '2' },
    'v8-flags': { type: 'string', default: '' },
  },
});
const QUEUE = 'launch';
const PREFIX = 'queue-gc';

if (values.role === 'worker') {
  for (const flag of values['v8-flags'].split(/\s+/).filter(Boolean)) setFlagsFromString(flag);
  const connection = new Redis(values.url ?? '', { maxRetriesPerRequest: null });
  // As apps/worker/src/worker.ts consumes a launch queue.
  const worker = new Worker(QUEUE, async () => ({ ignored: 'queue-gc' }), {
    connection,
    prefix: PREFIX,
    concurrency: Number(values.concurrency),
    maxStalledCount: 0,
    lockDuration: 30_000,
    stalledInterval: 30_000,
    name: 'queue-gc',
  });
  await worker.waitUntilReady();
  setTimeout(() => {
    setFlagsFromString('--trace-gc-nvp');
    process.stderr.write('ready\n');
  }, Number(values['settle-s']) * 1000);
  process.once('SIGTERM', () => {
    void worker.close().finally(() => {
      connection.disconnect();
      process.exit(0);
    });
  });
} else {
  const server = await startRedis({ own: true });
  const child = spawn(
    process.execPath,
    [
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      '--role',
      'worker',
      '--url',
      server.url,
      '--concurrency',
      values.concurrency,
      '--settle-s',
      values['settle-s'],
      `--v8-flags=${values['v8-flags']}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let trace = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    trace += chunk;
  });
  await new Promise<void>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => chunk.includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`the worker exited (${code}) before it was ready`)));
  });
  const connection = new Redis(server.url, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection, prefix: PREFIX });
  const jobs = Number(values.jobs);
  const started = performance.now();
  for (let i = 0; i < jobs; i++) {
    // As apps/coordinator/src/launcher.ts adds a launch.
    await queue.add(
      'launch',
      { pid: `q${i}`, attempt: 1 },
      {
        jobId: `q${i}.1`,
        attempts: 1,
        removeOnComplete: { age: 3600, count: 1000 },
        removeOnFail: { age: 86_400, count: 10_000 },
      },
    );
    await new Promise((resolve) => setTimeout(resolve, Number(values['interval-ms'])));
  }
  const seconds = (performance.now() - started) / 1000;
  await queue.close();
  connection.disconnect();
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  await server.stop();

  const scavenges = collections(trace)
    .filter((c) => c.kind === 'scavenge')
    .map((c) => ({ promotedKiB: c.promoted / 1024, pauseMs: c.pauseMs }));
  const promoted = scavenges.map((s) => s.promotedKiB);
  const pauses = scavenges.map((s) => s.pauseMs);
  process.stdout.write(
    `${scavenges.map((s) => `${s.promotedKiB.toFixed(0)} KiB/${s.pauseMs} ms`).join(', ')}\n` +
      `${jobs} jobs in ${seconds.toFixed(1)} s, v8 flags "${values['v8-flags']}": ${scavenges.length} scavenges, ` +
      `promoted KiB a scavenge median ${quantile(promoted, 0.5).toFixed(0)}, max ${Math.max(0, ...promoted).toFixed(0)}, ` +
      `total ${promoted.reduce((a, b) => a + b, 0).toFixed(0)}; pause median ${quantile(pauses, 0.5)} ms, max ${Math.max(0, ...pauses)} ms\n`,
  );
}
