import { shChildLaunch } from '@libos/examples';
import type { ImageSpecInput } from '@libos/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster, READ_REQUEST, shImage, writeResult } from '../src/index.js';

let cluster: Cluster;

const USAGE =
  '"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":11,"cost_usd":0.5},"steps":3';
/** A child that reads its request and ends with STATUS (plus FIELDS), reporting 11+4 tokens, $0.5, 3 steps. */
const ending = (status: string, fields = '') =>
  shImage(`${READ_REQUEST}; ${writeResult(`"status":"${status}",${fields}${USAGE}`)}`);
const reasoned = (status: string) => ending(status, `"reason":"asked to end ${status}",`);

/** Every ending of the contract, and what the parent's wait must say of it. */
const CASES: Record<string, { image: ImageSpecInput; status: string; outcome: Record<string, unknown> }> = {
  completed: {
    image: ending('completed', '"output":{"answer":42},'),
    status: 'exited',
    outcome: {
      type: 'completed',
      usage: { prompt_tokens: 11, completion_tokens: 4, cost_usd: 0.5, steps: 3 },
    },
  },
  no_report: {
    image: ending('no_report'),
    status: 'failed',
    outcome: { type: 'no_report', usage: { prompt_tokens: 11, completion_tokens: 4, steps: 3 } },
  },
  max_steps_exhausted: {
    image: ending('max_steps_exhausted'),
    status: 'failed',
    outcome: { type: 'max_steps_exhausted', usage: { prompt_tokens: 11, steps: 3 } },
  },
  context_yield: {
    image: reasoned('context_yield'),
    status: 'failed',
    outcome: {
      type: 'context_yield',
      reason: 'asked to end context_yield',
      usage: { prompt_tokens: 11, steps: 3 },
    },
  },
  aborted: {
    image: reasoned('aborted'),
    status: 'failed',
    outcome: { type: 'failed', reason: 'aborted: asked to end aborted', usage: { prompt_tokens: 11 } },
  },
  interrupted: {
    image: reasoned('interrupted'),
    status: 'failed',
    outcome: {
      type: 'failed',
      reason: 'interrupted: asked to end interrupted',
      usage: { prompt_tokens: 11 },
    },
  },
  failed: {
    image: reasoned('failed'),
    status: 'failed',
    outcome: { type: 'failed', reason: 'asked to end failed', usage: { prompt_tokens: 11 } },
  },
  // The deadline with no result: only the deadline (and the grace's kill) ends it.
  timed_out: {
    image: { ...shChildLaunch('never-reads-stdin', '30'), deadline_ms: 300, cancel_grace_ms: 200 },
    status: 'failed',
    outcome: { type: 'timed_out', unaccounted: 'the child left no result' },
  },
  // The deadline's stdin EOF makes a cancel-aware child report `interrupted`: still timed_out, usage kept.
  timed_out_with_usage: {
    image: { ...shChildLaunch('cancel-aware'), deadline_ms: 300, cancel_grace_ms: 3_000 },
    status: 'failed',
    outcome: { type: 'timed_out', usage: { prompt_tokens: 1, steps: 1 } },
  },
  malformed_json: {
    image: shImage(`${READ_REQUEST}; printf 'not json' > "$1"`),
    status: 'failed',
    outcome: {
      type: 'failed',
      reason: expect.stringMatching(/^malformed result file: not JSON: /),
      unaccounted: 'the result file is malformed',
    },
  },
  malformed_other_request: {
    image: shImage(`${READ_REQUEST}; id=other-1; ${writeResult('"status":"completed","output":1')}`),
    status: 'failed',
    outcome: {
      type: 'failed',
      reason: expect.stringMatching(/^malformed result file: answers request other-1, not \S+:1$/),
      unaccounted: 'the result file is malformed',
    },
  },
  malformed_status: {
    image: ending('finished'),
    status: 'failed',
    outcome: {
      type: 'failed',
      reason: 'malformed result file: unknown status finished',
      unaccounted: 'the result file is malformed',
    },
  },
  missing_result: {
    image: shChildLaunch('exits-without-result', '3'),
    status: 'failed',
    outcome: {
      type: 'failed',
      reason: 'the child exited 3 without writing a result',
      unaccounted: 'the child left no result',
      exit_code: 3,
    },
  },
  not_launched: {
    image: { command: '/nonexistent/child', args: ['{result_file}'] },
    status: 'failed',
    outcome: { type: 'failed', reason: expect.stringMatching(/^child spawn failed: .*ENOENT/) },
  },
};

beforeAll(async () => {
  cluster = await Cluster.start({ workers: 2, concurrency: 8 });
  for (const [name, { image }] of Object.entries(CASES)) await cluster.admin.putImage(name, image);
});
afterAll(async () => {
  expect(await cluster?.stop()).toEqual([]);
});

describe('each ending of the child contract', () => {
  it('reaches the parent’s wait with its status, outcome type and the reference’s reason', async () => {
    const parent = await cluster.root('collect every ending');
    const names = Object.keys(CASES);
    const children = await Promise.all(
      names.map((image) =>
        parent.client.spawn({ goal: `end as ${image}`, image, resource_budget: { steps: 5 } }),
      ),
    );
    const waited = await Promise.all(children.map((child) => parent.client.wait({ child_pid: child.pid })));
    for (const [i, name] of names.entries()) {
      const expected = CASES[name]!;
      const answer = waited[i]!;
      const pid = children[i]!.pid;
      expect({ name, status: answer.status }).toEqual({ name, status: expected.status });
      expect(answer.outcome, name).toMatchObject({ ...expected.outcome, attempt_id: `${pid}:1` });
      if (!('reason' in expected.outcome)) expect(answer.outcome?.reason, name).toBeUndefined();
      if (expected.status === 'exited') {
        const result = await parent.client.readObject({ oid: answer.result_oid ?? '' });
        expect(result.payload).toEqual({ answer: 42 });
        expect(answer.outcome?.unaccounted).toBeUndefined();
      } else {
        expect(answer.result_oid, name).toBeNull();
      }
    }
    // What the children reported is charged to the parent, whatever their ending.
    const parentView = await parent.client.getProcess();
    expect(parentView.resource_budget.tokens.used).toBe(7 * 15 + 1);
  });
});
