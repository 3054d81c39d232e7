import { describe, expect, it } from 'vitest';
import { answerText, deriveEdges, failureText, parseJournal, renderJournalHtml } from '../src/index.js';
import {
  attempt,
  didNotFinish,
  finished,
  LONG_ANSWER,
  line,
  SPECIAL_ANSWER,
  sampleJournal,
} from './fixtures.js';

describe('parseJournal', () => {
  it('decodes the legacy example line of the reference', () => {
    const legacy =
      '{"v":1,"e":{"call":{"kind":"scout","input":{"query":"hello"},"label":"hello","scope":""},"outcome":["Finished",{"value":{"a":1},"attempt":{"attempt_id":"sr-hello","steps_used":1,"prompt_tokens":7,"completion_tokens":3}}]}}';
    expect(parseJournal(legacy)).toEqual([
      {
        call: { kind: 'scout', input: { query: 'hello' }, label: 'hello', scope: '' },
        outcome: {
          type: 'Finished',
          value: { a: 1 },
          attempt: { attempt_id: 'sr-hello', steps_used: 1, prompt_tokens: 7, completion_tokens: 3 },
        },
      },
    ]);
  });

  it('skips blank, malformed, metadata, non-v1 and torn lines, keeping file order', () => {
    const good = (label: string) => line(finished(label, 'q', null));
    const text = [
      '',
      '{"v":1,"meta":{"workflow":"demo"}}',
      good('a'),
      '   ',
      'not json',
      '{"v":2,"e":{"call":{}}}',
      line({
        call: { kind: 'k', input: 1, label: 'bad phase', scope: '' },
        outcome: ['Finished', { value: 1, attempt: attempt('x', 1, 1, 1) }],
        phase: 7,
      }),
      line({ call: { kind: 'k', input: 1, label: 'bad outcome', scope: '' }, outcome: ['Done', {}] }),
      good('b'),
      good('c').slice(0, 40),
    ].join('\n');
    expect(parseJournal(text).map((entry) => entry.call.label)).toEqual(['a', 'b']);
  });

  it('decodes every failure encoding, with and without an attempt; null reads as absent', () => {
    const failures = [
      'TimedOut',
      'NoReport',
      'MaxSteps',
      'ContextYield',
      'Skipped',
      ['TimedOut'],
      ['Failed', 'boom'],
    ];
    const text = failures.map((failure) => line(didNotFinish('x', 'q', failure))).join('\n');
    const entries = parseJournal(
      `${text}\n${line({ ...didNotFinish('y', 'q', 'Skipped'), phase: null, started_at: null })}`,
    );
    expect(
      entries.map((entry) =>
        entry.outcome.type === 'DidNotFinish' ? failureText(entry.outcome.failure) : '',
      ),
    ).toEqual([
      'timed out',
      'finished without a report',
      'exhausted its step ceiling',
      'yielded at the context ceiling',
      'was skipped by the user',
      'timed out',
      'failed: boom',
      'was skipped by the user',
    ]);
    expect(entries[7]).not.toHaveProperty('phase', null);
    expect(entries[7]?.outcome.attempt).toBeUndefined();
    const nullScope = didNotFinish('z', 'q', 'NoReport');
    const [decoded] = parseJournal(
      line({ ...nullScope, call: { ...nullScope.call, scope: null, max_steps: null } }),
    );
    expect(decoded?.call).toEqual({ kind: 'explore', input: 'q', label: 'z', scope: '' });
  });
});

describe('deriveEdges', () => {
  it('links an answer longer than 60 code units whose first 50 characters a later input embeds', () => {
    const entries = parseJournal(sampleJournal());
    expect(deriveEdges(entries)).toEqual([{ from: 0, to: 2 }]);
  });

  it('needs more than 60 code units, a success, and an earlier entry', () => {
    const sixty = 'x'.repeat(60);
    const sixtyOne = 'y'.repeat(61);
    const entries = parseJournal(
      [
        line(finished('a', 'q', { answer: sixty })),
        line(finished('b', 'q', { answer: sixtyOne })),
        line(didNotFinish('c', 'q', ['Failed', 'z'.repeat(80)], attempt('c', 0, 0, 0))),
        line(finished('d', { query: `${sixty} ${sixtyOne} ${'z'.repeat(80)}` }, 'done')),
        line(finished('e', { query: 'q' }, { answer: `${'w'.repeat(70)}` })),
      ].join('\n'),
    );
    expect(deriveEdges(entries)).toEqual([{ from: 1, to: 3 }]);
  });

  it('matches JSON-escaped text and uses the whole report when it has no answer string', () => {
    const quoted = `He said "use the queue" and\nthen left; ${'p'.repeat(60)}`;
    const report = { findings: ['alpha', 'beta'], score: 0.75, note: 'n'.repeat(40) };
    expect(answerText(report)).toBe(JSON.stringify(report));
    const entries = parseJournal(
      [
        line(finished('quoted', 'q', { answer: quoted })),
        line(finished('report', 'q', report)),
        line(finished('uses both', { query: quoted, hints: JSON.stringify(report) }, 'ok')),
      ].join('\n'),
    );
    expect(deriveEdges(entries)).toEqual([
      { from: 0, to: 2 },
      { from: 1, to: 2 },
    ]);
  });

  it('counts characters, not code units, for the 50-character probe', () => {
    const emoji = `${'🚀'.repeat(49)}ab${'c'.repeat(20)}`; // 49 astral characters + 'a' = the probe
    const entries = parseJournal(
      [
        line(finished('rocket', 'q', { answer: emoji })),
        // 25 rockets are the first 50 code units, but not the first 50 characters: no edge.
        line(finished('half', '🚀'.repeat(30), 'ok')),
        line(finished('next', `${'🚀'.repeat(49)}a`, 'ok')),
      ].join('\n'),
    );
    expect(deriveEdges(entries)).toEqual([{ from: 0, to: 2 }]);
  });
});

describe('renderJournalHtml', () => {
  it('escapes everything from the journal and shows the counts', () => {
    const html = renderJournalHtml(parseJournal(sampleJournal()), '/tmp/<j>.jsonl');
    expect(html).toContain('4 recorded attempt(s) · 1 dataflow edge(s)');
    expect(html).toContain('<title>journal: /tmp/&lt;j&gt;.jsonl</title>');
    expect(html).not.toContain('<script>');
    expect(html).toContain(
      '&lt;script&gt;window.pwned = 1&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot; &#39;single&#39;',
    );
    expect(html).toContain('render &lt;html&gt;');
    expect(html).not.toContain('http-equiv="refresh"');
    expect(renderJournalHtml([], 'j', { watch: true })).toContain('<meta http-equiv="refresh" content="2">');
    expect(SPECIAL_ANSWER).toContain('<script>');
    expect(LONG_ANSWER.length).toBeGreaterThan(60);
  });
});
