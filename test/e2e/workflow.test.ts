import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { readJournalEntries } from '@libos/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ADMIN_TOKEN, Cluster, eventually, type Scratch, scratch } from '../src/index.js';

const PROGRAM = fileURLToPath(new URL('../../examples/src/workflows/run-answers.ts', import.meta.url));

const outputSchema = z.object({
  runner: z.enum(['local', 'cluster']),
  results: z.record(z.string(), z.unknown()),
  stats: z.object({ calls_made: z.number(), calls_replayed: z.number(), tokens_spent: z.number() }),
});
type Output = z.infer<typeof outputSchema>;

let cluster: Cluster;
let dir: Scratch;

beforeAll(async () => {
  [cluster, dir] = await Promise.all([Cluster.start({ workers: 2 }), scratch('libos-workflow-')]);
});
afterAll(async () => {
  expect(await cluster?.stop()).toEqual([]);
  await dir?.remove();
});

/** The example program as its own OS process; `cluster` gives it the harness's URL and admin token. */
function start(args: string[], cluster?: Cluster): ChildProcess {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith('LIBOS_')) env[name] = value;
  }
  env.LIBOS_HOME = dir.path('state'); // never the checkout's own .libos
  if (cluster) Object.assign(env, { LIBOS_URL: cluster.url, LIBOS_ADMIN_TOKEN: ADMIN_TOKEN });
  return spawn(process.execPath, ['--import', 'tsx', '--conditions=@libos/source', PROGRAM, ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

async function finish(child: ChildProcess) {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  return { code, stdout, stderr };
}

async function run(args: string[], cluster?: Cluster): Promise<{ output: Output; stderr: string }> {
  const { code, stdout, stderr } = await finish(start(args, cluster));
  expect(code, stderr).toBe(0);
  return { output: outputSchema.parse(JSON.parse(stdout)), stderr };
}

describe('the example workflow', () => {
  let local: Output;

  it('runs on the local runner: a quorum of three answers and a summary that needed a retry', async () => {
    ({ output: local } = await run(['--local', '--work-ms', '0']));
    expect(local.runner).toBe('local');
    expect(local.results).toMatchObject({
      answers: [
        { answer: 'WHAT DOES THE COORDINATOR RECORD', words: 5 },
        { answer: 'WHO RUNS A LAUNCHED CHILD', words: 5 },
        { answer: 'WHAT WAKES A BLOCKING WAIT', words: 5 },
      ],
      missed: ["agent 'ask: what is left unsaid' finished without a report"],
      summary_attempts: 2,
    });
    expect(local.stats).toMatchObject({ calls_made: 6, calls_replayed: 0 });
    expect(local.stats.tokens_spent).toBeGreaterThan(0);
  });

  it('prints the same results and accounts the same tokens on a cluster, its root ending with them', async () => {
    const { output, stderr } = await run(['--cluster', '--work-ms', '0'], cluster);
    expect(output.runner).toBe('cluster');
    expect(output.results).toEqual(local.results);
    expect(output.stats).toEqual(local.stats);

    const rootPid = /on the cluster as (\S+)/.exec(stderr)?.[1] ?? '';
    const root = await cluster.admin.getProcess(rootPid);
    expect(root.status).toBe('exited');
    expect((await cluster.admin.readObject(root.result_oid ?? '')).payload).toEqual(local.results);
    // Every call was a direct child of the root, launched on the answer image.
    const { processes } = await cluster.admin.listProcesses({ limit: 1000 });
    const children = processes.filter((p) => p.parent_pid === rootPid);
    expect(children).toHaveLength(6);
    expect(new Set(children.map((c) => c.image))).toEqual(new Set(['answer']));
    expect(children.filter((c) => c.status === 'exited')).toHaveLength(4);
  });

  it('resumes on the cluster after a crash: journaled answers replay, the rest runs again', async () => {
    const journal = dir.path('answers.jsonl');
    const args = ['--cluster', '--journal', journal, '--work-ms', '1500', '--concurrency', '2'];
    const crashed = start(args, cluster);
    const ended = finish(crashed);
    // The first pair has finished (and is journaled) while the second pair is still working.
    await eventually(async () => ((await dir.lines('answers.jsonl')).length >= 2 ? true : undefined), {
      withinMs: 60_000,
      what: 'two journaled outcomes',
    });
    crashed.kill('SIGKILL');
    expect((await ended).code).toBe(null);

    const before = readJournalEntries((await dir.lines('answers.jsonl')).join('\n'));
    const finished = before.filter((entry) => entry.outcome.type === 'Finished').length;
    expect(finished).toBeGreaterThanOrEqual(2);
    expect(finished).toBeLessThan(5); // a crash midway, not after the work

    const { output: resumed } = await run(args, cluster);
    expect(resumed.results).toEqual(local.results);
    expect(resumed.stats.calls_replayed).toBe(finished);
    expect(resumed.stats.calls_made + resumed.stats.calls_replayed).toBe(6);
    expect(resumed.stats.tokens_spent).toBeLessThan(local.stats.tokens_spent);
  });
});
