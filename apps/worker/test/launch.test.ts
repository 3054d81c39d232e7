import { writeFile } from 'node:fs/promises';
import { shChildLaunch } from '@libos/examples';
import { launchJobId } from '@libos/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROGRESS_AFTER_MS } from '../src/job-report.js';
import {
  completed,
  eventually,
  image,
  REQUEST_ID,
  readLines,
  root,
  scratch,
  sh,
  spawn,
  statusIs,
  useHarness,
  view,
  waitChild,
} from './helpers.js';

const h = useHarness();

/** Shell: write a result with STATUS, extra FIELDS (`"k":v,`), usage (11+4 tokens, $0.5) and 3 steps. */
function ending(status: string, fields = ''): string {
  const usage =
    '"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":11,"cost_usd":0.5}';
  return `printf '{"version":1,"request_id":"%s","status":"${status}",${fields}${usage},"steps":3}' "$id" > "$1.tmp" && mv "$1.tmp" "$1"`;
}
let files: Awaited<ReturnType<typeof scratch>>;

beforeAll(async () => {
  files = await scratch();
  await h.startWorker({ LIBOS_CONCURRENCY: '6' });
});
afterAll(() => files?.cleanup());

describe('a launch', () => {
  it('runs the image under the contract and the parent’s wait sees exited with the result object', async () => {
    const echo = await image(h, { ...shChildLaunch('echo'), kind: 'echo-kind', deadline_ms: 20_000 });
    const parent = await root(h, { steps: 50, wall_ms: 60_000 });
    const child = await spawn(h, parent, echo, {
      input: { q: 'hello' },
      schema: { type: 'object', required: ['q'] },
      resource_budget: { steps: 5, wall_ms: 30_000 },
    });
    const waited = await waitChild(h, parent, child);
    expect(waited).toMatchObject({
      ready: true,
      status: 'exited',
      outcome: { type: 'completed', attempt_id: `${child}:1` },
    });
    const result = await h.kernel.tools.read_object({ pid: parent }, { oid: waited.result_oid ?? '' });
    expect(result.payload).toEqual({
      request: {
        version: 1,
        request_id: `${child}:1`,
        kind: 'echo-kind',
        input: { q: 'hello', goal: 'test child', pid: child, parent_pid: parent, input: { q: 'hello' } },
        limits: { max_steps: 5 },
        schema: { type: 'object', required: ['q'] },
      },
    });
    const done = await view(h, child);
    expect(done.outcome).toMatchObject({
      exit_code: 0,
      steps: 0,
      usage: { prompt_tokens: 0, completion_tokens: 0 },
    });
    expect(done.outcome?.usage?.wall_ms).toBeGreaterThanOrEqual(0);
  });

  it('shows on the board as the job’s progress once it has run a second, and its progress ends with its status', async () => {
    const go = files.file('go');
    const waiter = await image(
      h,
      sh(`read -r request; ${REQUEST_ID}; while [ ! -e "$2" ]; do sleep 0.05; done; ${completed('1')}`, go),
    );
    const parent = await root(h);
    const spawnedAt = performance.now();
    const child = await spawn(h, parent, waiter);
    const id = launchJobId(child, 1);
    const running = await eventually(async () => {
      const progress = (await h.queue().getJob(id))?.progress;
      return typeof progress === 'object' ? progress : undefined;
    });
    // written by the timer, a second after the claim (which came after the spawn), not at it
    expect(performance.now() - spawnedAt).toBeGreaterThanOrEqual(PROGRESS_AFTER_MS);
    expect(running).toEqual({
      pid: child,
      attempt: 1,
      goal: 'test child',
      image: waiter,
      status: 'running',
    });
    await writeFile(go, '');
    expect((await waitChild(h, parent, child)).status).toBe('exited');
    const job = await eventually(async () => {
      const found = await h.queue().getJob(id);
      return found?.returnvalue ? found : undefined;
    });
    // it does not stay `running` on the board
    expect(job.progress).toEqual({ ...running, status: 'exited', outcome: { type: 'completed' } });
    expect(job.returnvalue).toMatchObject({ status: 'exited', outcome: { type: 'completed' } });
  });

  it('charges the reported usage and the measured wall time to the budget', async () => {
    const spender = await image(
      h,
      sh(`read -r request; ${REQUEST_ID}; sleep 0.1; ${ending('completed', '"output":1,')}`),
    );
    const parent = await root(h, { tokens: 1_000 });
    const child = await spawn(h, parent, spender);
    const waited = await waitChild(h, parent, child);
    expect(waited.status).toBe('exited');
    const done = await view(h, child);
    expect(done.outcome?.usage).toMatchObject({
      prompt_tokens: 11,
      completion_tokens: 4,
      steps: 3,
      cost_usd: 0.5,
    });
    expect(done.outcome?.usage?.wall_ms).toBeGreaterThanOrEqual(100);
    expect(done.resource_budget.tokens.used).toBe(15);
    expect((await view(h, parent)).resource_budget.tokens.used).toBe(15);
  });
});

/** The launch job of `pid`'s first attempt once BullMQ has it failed (read after the move). */
async function failedJob(pool: string, pid: string) {
  const id = launchJobId(pid, 1);
  await eventually(async () => ((await h.queue(pool).getJobState(id)) === 'failed' ? true : undefined));
  const job = await h.queue(pool).getJob(id);
  if (!job) throw new Error(`no job ${id}`);
  return job;
}

describe('each contract ending', () => {
  it('maps to failed (or its own outcome type) with the contract’s reason', async () => {
    const parent = await root(h);
    const cases = [
      ['no_report', 'no_report', undefined],
      ['max_steps_exhausted', 'max_steps_exhausted', undefined],
      // the contract's ContextYield terminal carries no reason; the child's own reaches the outcome
      ['context_yield', 'context_yield', 'asked to end context_yield'],
      ['aborted', 'failed', 'aborted: asked to end aborted'],
      ['interrupted', 'failed', 'interrupted: asked to end interrupted'],
      ['failed', 'failed', 'asked to end failed'],
    ] as const;
    const children = await Promise.all(
      cases.map(async ([status]) => {
        const fields = ['no_report', 'max_steps_exhausted'].includes(status)
          ? ''
          : `"reason":"asked to end ${status}",`;
        const ender = await image(h, sh(`read -r request; ${REQUEST_ID}; ${ending(status, fields)}`));
        return spawn(h, parent, ender);
      }),
    );
    for (const [i, [, type, reason]] of cases.entries()) {
      const waited = await waitChild(h, parent, children[i] ?? '', 30_000);
      expect(waited.status).toBe('failed');
      expect(waited.result_oid).toBeNull();
      expect(waited.outcome).toMatchObject({
        type,
        usage: { prompt_tokens: 11, completion_tokens: 4, steps: 3 },
      });
      expect(waited.outcome?.reason).toBe(reason);
      // Bull Board tells the truth: a failed process is a failed job, with the outcome's reason,
      // and its progress shows goal, image and status
      const pid = children[i] ?? '';
      const job = await failedJob('default', pid);
      expect(job.failedReason).toBe(`${pid} failed (${type}${reason ? `: ${reason}` : ''})`);
      expect(job.data).toEqual({ pid, attempt: 1 });
      expect(job.progress).toMatchObject({
        pid,
        goal: 'test child',
        status: 'failed',
        outcome: { type, ...(reason ? { reason } : {}) },
      });
      expect((job.progress as { image: string }).image).toMatch(/^img-/);
    }
  });

  it('a missing result, a malformed one, a deadline and a failed spawn', async () => {
    const parent = await root(h);
    const noResult = await image(h, shChildLaunch('exits-without-result', '3'));
    const malformed = await image(h, sh('read -r request; printf "not json" > "$1"'));
    const slow = await image(h, {
      ...shChildLaunch('never-reads-stdin', '30'),
      deadline_ms: 200,
      cancel_grace_ms: 100,
    });
    const missing = await image(h, { command: '/nonexistent/child', args: ['{result_file}'] });
    const [a, b, c, d] = await Promise.all([
      spawn(h, parent, noResult),
      spawn(h, parent, malformed),
      spawn(h, parent, slow),
      spawn(h, parent, missing),
    ]);
    const outcome = async (pid: string | undefined) => (await waitChild(h, parent, pid ?? '')).outcome;
    expect(await outcome(a)).toMatchObject({
      type: 'failed',
      reason: 'the child exited 3 without writing a result',
      unaccounted: 'the child left no result',
      exit_code: 3,
    });
    expect(await outcome(b)).toMatchObject({
      type: 'failed',
      unaccounted: 'the result file is malformed',
      reason: expect.stringMatching(/^malformed result file: not JSON/),
    });
    expect(await outcome(c)).toMatchObject({ type: 'timed_out', unaccounted: 'the child left no result' });
    expect(await outcome(d)).toMatchObject({
      type: 'failed',
      reason: expect.stringMatching(/^child spawn failed: /),
    });
  });

  it('a cwd that does not exist fails the launch as the runner reports it, and creates nothing', async () => {
    const echo = await image(h, shChildLaunch('echo'));
    const parent = await root(h);
    const child = await spawn(h, parent, echo, { working_directory: `${files.dir}/absent` });
    const waited = await waitChild(h, parent, child);
    expect(waited.outcome).toMatchObject({
      type: 'failed',
      reason: expect.stringMatching(
        /^child spawn failed: cwd .*\/absent does not exist on this worker.s host \(ENOENT\)$/,
      ),
    });
    expect(await readLines(`${files.dir}/absent`)).toEqual([]);
  });
});

describe('at most once', () => {
  it('a launch paused or cancelled while queued is refused at claim, and resume launches a new attempt', async () => {
    const echo = await image(h, { ...shChildLaunch('echo'), pool: 'held' });
    const parent = await root(h);
    const [held, dropped] = await Promise.all([spawn(h, parent, echo), spawn(h, parent, echo)]);
    await h.kernel.tools.signal_child_process({ pid: parent }, { child_pid: held, signal: 'pause' });
    await h.kernel.tools.signal_child_process({ pid: parent }, { child_pid: dropped, signal: 'cancel' });
    expect((await view(h, dropped)).status).toBe('killed');
    await h.startWorker({ LIBOS_POOLS: 'held' });
    const summary = await eventually(
      async () => (await h.queue('held').getJob(launchJobId(held, 1)))?.returnvalue ?? undefined,
    );
    expect(summary).toEqual({ pid: held, attempt: 1, claimed: false, refused: 'not_runnable' });
    // the killed one is a failed job on the board, with the kill's reason
    const killedJob = await failedJob('held', dropped);
    expect(killedJob.failedReason).toBe(`${dropped} killed (killed: cancel)`);
    expect((await view(h, held)).status).toBe('paused');
    await h.kernel.tools.signal_child_process({ pid: parent }, { child_pid: held, signal: 'resume' });
    const waited = await waitChild(h, parent, held);
    expect(waited).toMatchObject({ status: 'exited', outcome: { attempt_id: `${held}:2` } });
  });

  it('a duplicate job for the same attempt never runs the child twice', async () => {
    const runs = files.file('runs');
    const once = await image(
      h,
      sh(`read -r request; ${REQUEST_ID}; echo "$id" >> "$2"; sleep 0.4; ${completed('"once"')}`, runs),
    );
    const parent = await root(h);
    const child = await spawn(h, parent, once);
    await statusIs(h, child, 'running');
    const duplicate = await h
      .queue()
      .add('launch', { pid: child, attempt: 1 }, { jobId: `${launchJobId(child, 1)}-dup` });
    const waited = await waitChild(h, parent, child);
    expect(waited.status).toBe('exited');
    const late = await h
      .queue()
      .add('launch', { pid: child, attempt: 1 }, { jobId: `${launchJobId(child, 1)}-late` });
    for (const job of [duplicate, late]) {
      const summary = await eventually(
        async () => (await h.queue().getJob(job.id ?? ''))?.returnvalue ?? undefined,
      );
      expect(summary).toMatchObject({ pid: child, attempt: 1, claimed: false, refused: 'not_runnable' });
    }
    expect(await readLines(runs)).toEqual([`${child}:1`]);
    const first = await h.queue().getJob(launchJobId(child, 1));
    // a launch shorter than a second writes no progress: its return value is the board's view
    expect(first?.returnvalue).toEqual({
      pid: child,
      attempt: 1,
      goal: 'test child',
      image: once,
      claimed: true,
      terminal: 'captured',
      status: 'exited',
      outcome: { type: 'completed' },
    });
    expect(first?.progress).toBe(0); // BullMQ's own, never written
    expect(first?.data).toEqual({ pid: child, attempt: 1 }); // nothing a queue reader could act with
  });
});
