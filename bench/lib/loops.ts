// The loops several benchmarks share: a bare loop of contract children without libos (through
// node:child_process.spawn or execa), and a cluster's rounds through spawn/wait (with the SDK, or
// with plain fetch as a service without it) and through the batch tools spawn_children/wait_children.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeRequestLine } from '@libos/contract';
import { ADMIN_TOKEN, type Cluster, WORKSPACE } from '@libos/e2e';
import { posixSpawn } from '@libos/runner';
import { execa } from 'execa';
import { runPool } from './pool.js';

/**
 * The trivial contract children: `stamp` reports its start and end times (sh, from date(1)),
 * `stampBash` the same from bash's clock without a fork (for latency: see the file), `trivial`
 * only builtins.
 */
export const CHILD_SCRIPTS = {
  stamp: fileURLToPath(new URL('../children/stamp.sh', import.meta.url)),
  stampBash: fileURLToPath(new URL('../children/stamp.bash', import.meta.url)),
  trivial: fileURLToPath(new URL('../children/trivial.sh', import.meta.url)),
} as const;

/** How a child is launched: `{result_file}` in an argument is replaced by its result file's path. */
export interface Launch {
  readonly command: string;
  readonly args: readonly string[];
}

/** How a bare loop runs one child: its command, argv and request line; resolves at its exit. */
export type RunChild = (command: string, argv: string[], line: string) => Promise<void>;

/** Through node:child_process.spawn: what a plain Node service pays. */
export const spawnChild: RunChild = (command, argv, line) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(command, argv, { stdio: ['pipe', 'ignore', 'inherit'] });
    child.stdin.end(line);
    child.once('error', reject);
    child.once('exit', () => resolve());
  });

/** Through glibc's posix_spawn, as the runner launches: no fork of this process. */
export const posixSpawnChild: RunChild = async (command, argv, line) => {
  const child = await posixSpawn({
    command,
    args: argv,
    cwd: undefined,
    env: process.env,
    stderr: 'inherit',
    extraPipes: [],
    fds: [],
  });
  child.stdout.resume();
  child.stdin.end(line);
  await child.exit;
};

/** Through execa. */
export const execaChild: RunChild = async (command, argv, line) => {
  await execa(command, argv, { input: line });
};

/** `count` children without libos at `concurrency`, each launched by `runChild` and its result read: children/s. */
export async function bareLoop(
  launch: Launch,
  count: number,
  concurrency: number,
  runChild: RunChild,
): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'libos-bench-'));
  const started = performance.now();
  await runPool(count, concurrency, async (i) => {
    const path = join(dir, `${i}.json`);
    const argv = launch.args.map((arg) => arg.replace('{result_file}', path));
    await runChild(
      launch.command,
      argv,
      encodeRequestLine({ request_id: `b${i}`, kind: 'stamp', input: {} }),
    );
    const doc = JSON.parse(await readFile(path, 'utf8')) as { status: string };
    if (doc.status !== 'completed') throw new Error('bare child failed');
  });
  const rate = count / ((performance.now() - started) / 1000);
  await rm(dir, { recursive: true, force: true });
  return rate;
}

/** `count` children of `image` under one new root: all spawned (16 at a time), then all waited (64): children/s. */
export async function clusterThroughput(cluster: Cluster, image: string, count: number): Promise<number> {
  const { client } = await cluster.root('throughput', {
    goal: 'throughput',
    resource_budget: { children: count + 10 },
  });
  const started = performance.now();
  // Spawn all, then wait for all: the workers' concurrency bounds what runs at once.
  const children = await runPool(count, 16, (i) => client.spawn({ goal: `t${i}`, image }));
  await runPool(children.length, 64, async (i) => {
    const done = await client.wait({ child_pid: children[i]!.pid });
    if (done.status !== 'exited') throw new Error(`child ${i}: ${JSON.stringify(done.outcome)}`);
  });
  return count / ((performance.now() - started) / 1000);
}

/** A POST of `body` as JSON with a bearer token, as a service without the SDK sends it; the answer's JSON. */
async function postJson(url: string, token: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

/**
 * `clusterThroughput`'s round with the global `fetch` instead of the SDK: the root made through
 * `POST /v1/admin/processes` (admin token), then `POST /v1/tools/spawn_child_process` and
 * `/wait_child_process` with the root's process token, the wait asked again while a long-poll
 * window ends unready (docs/api.md, Long-polls): children/s.
 */
export async function clusterFetchThroughput(
  cluster: Cluster,
  image: string,
  count: number,
): Promise<number> {
  const root = await postJson(`${cluster.url}/v1/admin/processes`, ADMIN_TOKEN, {
    goal: 'fetch throughput',
    cwd: WORKSPACE,
    resource_budget: { children: count + 10 },
  });
  const tool = (name: string, args: unknown) =>
    postJson(`${cluster.url}/v1/tools/${name}`, String(root.token), args);
  const started = performance.now();
  const children = await runPool(count, 16, (i) => tool('spawn_child_process', { goal: `t${i}`, image }));
  await runPool(children.length, 64, async (i) => {
    for (;;) {
      const done = await tool('wait_child_process', { child_pid: children[i]!.pid });
      if (!done.ready) continue;
      if (done.status !== 'exited') throw new Error(`child ${i}: ${JSON.stringify(done.outcome)}`);
      return;
    }
  });
  return count / ((performance.now() - started) / 1000);
}

/** The batch tools' round: spawn_children of `batch` children, then one wait_children (all) per batch, 4 batches at a time. */
export async function clusterBatchThroughput(
  cluster: Cluster,
  image: string,
  count: number,
  batch = 100,
): Promise<number> {
  const { client } = await cluster.root('batch throughput', {
    goal: 'batch throughput',
    resource_budget: { children: count + 10 },
  });
  const started = performance.now();
  await runPool(Math.ceil(count / batch), 4, async (b) => {
    const size = Math.min(batch, count - b * batch);
    const { children } = await client.spawnChildren({
      children: Array.from({ length: size }, (_, i) => ({ goal: `t${b * batch + i}`, image })),
    });
    const done = await client.waitChildren({ child_pids: children.map((c) => c.pid), mode: 'all' });
    const failed = done.children.find((one) => one.status !== 'exited');
    if (failed) throw new Error(`child ${failed.child_pid}: ${JSON.stringify(failed.outcome)}`);
  });
  return count / ((performance.now() - started) / 1000);
}
