import { describe, expect, it } from 'vitest';
import { LOG_LINE_OVERHEAD, type LogRecord, logLineBytes } from '../src/index.js';
import { refusal, root, runningChild, USAGE, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;
const line = (text: string, stream: 'o' | 'e' = 'e', time = 1_733_238_000_000): LogRecord => [
  stream,
  time,
  text,
];
const cost = (text: string) => logLineBytes(text) + LOG_LINE_OVERHEAD;

describe('child logs', () => {
  it('appends batches and reads them back in order, with stream, time and attempt', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    await k().logs.append(
      child.pid,
      1,
      { lines: [line('one'), line('two', 'o')], dropped: 0, end: false },
      1 << 20,
    );
    await k().logs.append(child.pid, 1, { lines: [line('three é')], dropped: 0, end: false }, 1 << 20);
    const page = await k().logs.read(child.pid);
    expect(page).toMatchObject({
      pid: child.pid,
      attempt: 1,
      dropped_bytes: 0,
      ended: false,
      has_more: false,
    });
    expect(page.lines).toEqual([
      { attempt: 1, stream: 'stderr', time: '2024-12-03T15:00:00.000Z', line: 'one' },
      { attempt: 1, stream: 'stdout', time: '2024-12-03T15:00:00.000Z', line: 'two' },
      { attempt: 1, stream: 'stderr', time: '2024-12-03T15:00:00.000Z', line: 'three é' },
    ]);
    const first = await k().logs.read(child.pid, { limit: 2 });
    expect(first.lines.map((l) => l.line)).toEqual(['one', 'two']);
    expect(first.has_more).toBe(true);
    const rest = await k().logs.read(child.pid, { after: first.next ?? undefined });
    expect(rest.lines.map((l) => l.line)).toEqual(['three é']);
    expect((await k().logs.read(child.pid, { after: rest.next ?? undefined })).lines).toEqual([]);
  });

  it('keeps the bound by dropping the oldest lines, counting their bytes', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const texts = Array.from({ length: 10 }, (_, i) => `line ${i} ${'x'.repeat(50)}`);
    const max = cost(texts[0]!) * 4; // room for four lines
    for (const text of texts) {
      await k().logs.append(child.pid, 1, { lines: [line(text)], dropped: 0, end: false }, max);
    }
    let page = await k().logs.read(child.pid);
    expect(page.lines.map((l) => l.line)).toEqual(texts.slice(6));
    expect(page.dropped_bytes).toBe(6 * logLineBytes(texts[0]!));
    // a batch bigger than the bound keeps its newest lines; the worker's own drops add up
    await k().logs.append(child.pid, 1, { lines: texts.map((t) => line(t)), dropped: 1000, end: false }, max);
    page = await k().logs.read(child.pid);
    expect(page.lines.map((l) => l.line)).toEqual(texts.slice(6));
    expect(page.dropped_bytes).toBe(6 * logLineBytes(texts[0]!) + 1000 + 10 * logLineBytes(texts[0]!));
    // empty lines cost their overhead: a flood of them is bounded too
    await k().logs.append(
      child.pid,
      1,
      { lines: Array.from({ length: 1000 }, () => line('')), dropped: 0, end: false },
      max,
    );
    expect((await k().logs.read(child.pid)).lines.length).toBe(Math.floor(max / cost('')));
    expect(await env.redis.xlen(k().keys.log(child.pid, 1))).toBe(Math.floor(max / cost('')));
  });

  it('ends with the last batch, or when the process is terminal and its worker is done', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    await k().logs.append(child.pid, 1, { lines: [line('bye')], dropped: 0, end: true }, 1 << 20);
    expect((await k().logs.read(child.pid)).ended).toBe(true);
    const quiet = await runningChild(env, parent.pid);
    expect((await k().logs.read(quiet.pid)).ended).toBe(false);
    await k().worker.complete(quiet.pid, 1, quiet.fence, {
      terminal: { type: 'no_report' },
      usage: USAGE,
    });
    expect(await k().logs.read(quiet.pid)).toMatchObject({ ended: true, lines: [], next: null });
    // a caller-driven process has no attempt: an empty log that has ended
    expect(await k().logs.read(parent.pid)).toMatchObject({ attempt: 0, ended: true, lines: [] });
  });

  it('after a process_exit stays open until the worker’s completion: the child may still print', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    await k().logs.append(child.pid, 1, { lines: [line('working')], dropped: 0, end: false }, 1 << 20);
    await k().tools.process_exit({ pid: child.pid }, { payload: { done: true } });
    expect((await k().logs.read(child.pid)).ended).toBe(false);
    await k().worker.complete(child.pid, 1, child.fence, { terminal: { type: 'no_report' }, usage: USAGE });
    expect((await k().logs.read(child.pid)).ended).toBe(true);
    // killed while queued: no worker will ever write
    const queued = await k().tools.spawn_child_process({ pid: parent.pid }, { goal: 'never runs' });
    expect((await k().logs.read(queued.pid)).ended).toBe(false);
    await k().tools.signal_child_process({ pid: parent.pid }, { child_pid: queued.pid, signal: 'terminate' });
    expect((await k().logs.read(queued.pid)).ended).toBe(true);
  });

  it('refuses an unknown pid, an attempt that does not exist and a bad cursor', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const unknown = await refusal(k().logs.read(`${parent.pid}.99`));
    expect(unknown.code).toBe('not_found');
    const attempt = await refusal(k().logs.read(child.pid, { attempt: 2 }));
    expect([attempt.code, attempt.reason]).toEqual(['invalid_argument', 'no_attempt']);
    const cursor = await refusal(k().logs.read(child.pid, { after: 'nope' }));
    expect(cursor.code).toBe('invalid_argument');
    const append = await refusal(k().logs.append(child.pid, 3, { lines: [], dropped: 0, end: true }, 100));
    expect(append.reason).toBe('no_attempt');
  });

  it('follows a log through the wake hub until it ends', async () => {
    const parent = await root(env);
    const child = await runningChild(env, parent.pid);
    const stop = new AbortController();
    const seen: string[] = [];
    let ended = false;
    const following = (async () => {
      for await (const page of k().logs.follow(child.pid, {}, stop.signal)) {
        seen.push(...page.lines.map((l) => l.line));
        ended = page.ended;
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 100));
    await k().logs.append(child.pid, 1, { lines: [line('a')], dropped: 0, end: false }, 1 << 20);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen).toEqual(['a']);
    await k().logs.append(child.pid, 1, { lines: [line('b')], dropped: 0, end: true }, 1 << 20);
    await following;
    expect(seen).toEqual(['a', 'b']);
    expect(ended).toBe(true);
  });
});
