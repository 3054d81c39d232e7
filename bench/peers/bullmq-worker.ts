// The hand-written BullMQ + execa peer's worker (bench/peers.ts): one OS process consuming the
// `children` queue with a concurrency, running each job's contract child through execa and
// reading its result file, and the `parents` queue (FlowProducer parents: nothing to do once
// their children are done). Prints `ready` once both consumers are connected.
//   PEERS_REDIS_PORT=… PEERS_CONCURRENCY=4 node --import tsx bench/peers/bullmq-worker.ts
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'bullmq';
import { execa } from 'execa';
import { z } from 'zod';

const env = z
  .object({ PEERS_REDIS_PORT: z.coerce.number().int(), PEERS_CONCURRENCY: z.coerce.number().int().min(1) })
  .parse(process.env);
const jobData = z.object({ command: z.string(), args: z.array(z.string()), line: z.string() });
const connection = { host: '127.0.0.1', port: env.PEERS_REDIS_PORT, maxRetriesPerRequest: null };
const dir = await mkdtemp(join(tmpdir(), 'libos-bench-bullmq-'));

const children = new Worker(
  'children',
  async (job) => {
    const { command, args, line } = jobData.parse(job.data);
    const path = join(dir, `${job.id}.json`);
    await execa(
      command,
      args.map((arg) => arg.replace('{result_file}', path)),
      { input: line },
    );
    const doc = JSON.parse(await readFile(path, 'utf8')) as { status: string; output?: unknown };
    await rm(path, { force: true });
    if (doc.status !== 'completed') throw new Error(`child ended ${doc.status}`);
    return doc.output;
  },
  { connection, concurrency: env.PEERS_CONCURRENCY },
);
const parents = new Worker('parents', async () => 'done', { connection, concurrency: 1 });
await Promise.all([children.waitUntilReady(), parents.waitUntilReady()]);
process.stdout.write('ready\n');

process.once('SIGTERM', async () => {
  await Promise.all([children.close(), parents.close()]);
  await rm(dir, { recursive: true, force: true });
  process.exit(0);
});
