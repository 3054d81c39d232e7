import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AgentFailure,
  decodeEntry,
  encodeJournalLine,
  fileJournal,
  JournalCorrupted,
  type JournalEntry,
  readJournalEntries,
  Workflow,
} from '../src/index.js';
import { attemptOf, echoRunner, ScriptedRunner } from './workflow-support.js';

const LEGACY =
  '{"v":1,"e":{"call":{"kind":"scout","input":{"query":"hello"},"label":"hello","scope":""},"outcome":["Finished",{"value":{"a":1},"attempt":{"attempt_id":"sr-hello","steps_used":1,"prompt_tokens":7,"completion_tokens":3}}]}}';

const LEGACY_ENTRY: JournalEntry = {
  call: { kind: 'scout', input: { query: 'hello' }, label: 'hello', scope: '' },
  outcome: {
    type: 'Finished',
    value: { a: 1 },
    attempt: { attemptId: 'sr-hello', stepsUsed: 1, promptTokens: 7, completionTokens: 3 },
  },
};

function entry(label: string, outcome: JournalEntry['outcome'] = AgentFailureOutcome()): JournalEntry {
  return { call: { kind: 'k', input: { query: label }, label, scope: '' }, outcome };
}

function AgentFailureOutcome(): JournalEntry['outcome'] {
  return { type: 'Finished', value: 'v', attempt: attemptOf('a') };
}

describe('journal entry encoding', () => {
  it('decodes the legacy example line and re-encodes it byte for byte', () => {
    const decoded = readJournalEntries(LEGACY);
    expect(decoded).toEqual([LEGACY_ENTRY]);
    expect(encodeJournalLine(LEGACY_ENTRY)).toBe(`${LEGACY}\n`);
  });

  it('round-trips every outcome shape with the reference encoding', () => {
    const full = attemptOf('cr-1', 10, 20, {
      costUsd: 0.5,
      unaccounted: "the child's result carries no usage",
    });
    const cases: [JournalEntry, string][] = [
      [
        {
          call: { kind: 'k', input: null, label: 'l', maxSteps: 7, scope: 's', schema: { type: 'object' } },
          outcome: { type: 'Finished', value: null, attempt: full },
          phase: 'gather',
          startedAt: 1_700_000_000_000,
          finishedAt: 1_700_000_000_123,
        },
        '{"call":{"kind":"k","input":null,"label":"l","max_steps":7,"scope":"s","schema":{"type":"object"}},' +
          '"outcome":["Finished",{"value":null,"attempt":{"attempt_id":"cr-1","steps_used":1,"prompt_tokens":10,' +
          '"completion_tokens":20,"cost_usd":0.5,"unaccounted":"the child\'s result carries no usage"}}],' +
          '"phase":"gather","started_at":1700000000000,"finished_at":1700000000123}',
      ],
      [
        entry('t', { type: 'DidNotFinish', failure: AgentFailure.TimedOut, attempt: attemptOf('cr-2') }),
        '{"call":{"kind":"k","input":{"query":"t"},"label":"t","scope":""},"outcome":["DidNotFinish",' +
          '{"failure":"TimedOut","attempt":{"attempt_id":"cr-2","steps_used":1,"prompt_tokens":0,"completion_tokens":0}}]}',
      ],
      [
        entry('s', { type: 'DidNotFinish', failure: AgentFailure.Skipped }),
        '{"call":{"kind":"k","input":{"query":"s"},"label":"s","scope":""},"outcome":["DidNotFinish",{"failure":"Skipped"}]}',
      ],
      [
        entry('f', { type: 'DidNotFinish', failure: AgentFailure.Failed('child spawn failed: ENOENT') }),
        '{"call":{"kind":"k","input":{"query":"f"},"label":"f","scope":""},"outcome":["DidNotFinish",' +
          '{"failure":["Failed","child spawn failed: ENOENT"]}]}',
      ],
    ];
    for (const [value, json] of cases) {
      const line = encodeJournalLine(value);
      expect(line).toBe(`{"v":1,"e":${json}}\n`);
      expect(readJournalEntries(line)).toEqual([value]);
    }
    for (const failure of ['NoReport', 'MaxSteps', 'ContextYield'] as const) {
      const value = entry(failure, { type: 'DidNotFinish', failure: { type: failure } });
      expect(readJournalEntries(encodeJournalLine(value))).toEqual([value]);
    }
  });

  it('reads null as absent, tolerates a one-element nullary failure, and refuses mistyped attribution', () => {
    const base = JSON.parse(LEGACY).e;
    const withNulls = {
      ...base,
      call: { ...base.call, max_steps: null, schema: null },
      phase: null,
      started_at: null,
      finished_at: null,
    };
    expect(decodeEntry(withNulls)).toEqual(LEGACY_ENTRY);
    expect(
      decodeEntry({ ...base, outcome: ['DidNotFinish', { failure: ['NoReport'], attempt: null }] }).outcome,
    ).toEqual({
      type: 'DidNotFinish',
      failure: { type: 'NoReport' },
    });
    expect(() => decodeEntry({ ...base, phase: 3 })).toThrow();
    expect(() => decodeEntry({ ...base, started_at: 1.5 })).toThrow();
    expect(() => decodeEntry({ ...base, finished_at: '12' })).toThrow();
    expect(() =>
      decodeEntry({ ...base, outcome: ['Finished', { attempt: base.outcome[1].attempt }] }),
    ).toThrow();
  });

  it('readJournalEntries skips blank, malformed, metadata and non-v1 lines without throwing', () => {
    const text = [
      '',
      '{"v":1,"meta":"generation 2"}',
      'not json',
      '{"v":2,"e":{}}',
      LEGACY,
      '{"v":1,"e":{"call":1}}',
      '{"v":1,"e',
    ].join('\n');
    expect(readJournalEntries(text)).toEqual([LEGACY_ENTRY]);
  });
});

describe('fileJournal', () => {
  let dir: string;
  let path: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sdk-journal-'));
    path = join(dir, 'run.jsonl');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('starts empty when the file is missing and creates it on the first append', async () => {
    const journal = await fileJournal(path);
    expect(journal.prior()).toEqual([]);
    await expect(readFile(path)).rejects.toMatchObject({ code: 'ENOENT' });
    await journal.append(LEGACY_ENTRY);
    expect(await readFile(path, 'utf8')).toBe(`${LEGACY}\n`);
    expect(journal.recorded()).toEqual([LEGACY_ENTRY]);
    expect((await fileJournal(path)).prior()).toEqual([LEGACY_ENTRY]);
  });

  it('serialises concurrent appends into whole lines in call order, across journal values of one path', async () => {
    const journals = [await fileJournal(path), await fileJournal(path)];
    const entries = Array.from({ length: 60 }, (_, i) => entry(`e${i}-${'x'.repeat(i * 300)}`));
    await Promise.all(entries.map((e, i) => journals[i % 2]?.append(e)));
    const text = await readFile(path, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    expect(text.split('\n').slice(0, -1)).toEqual(entries.map((e) => encodeJournalLine(e).trimEnd()));
  });

  it('drops a torn last line and truncates the file to the last whole line', async () => {
    const good = encodeJournalLine(entry('a')) + encodeJournalLine(entry('b'));
    await writeFile(path, `${good}${encodeJournalLine(entry('c')).slice(0, 40)}`);
    const journal = await fileJournal(path);
    expect(journal.prior().map((e) => e.call.label)).toEqual(['a', 'b']);
    expect(await readFile(path, 'utf8')).toBe(good);
    await expect(readFile(`${path}.repair`)).rejects.toMatchObject({ code: 'ENOENT' });
    await journal.append(entry('d'));
    expect(readJournalEntries(await readFile(path, 'utf8')).map((e) => e.call.label)).toEqual([
      'a',
      'b',
      'd',
    ]);
  });

  it('splits at newlines before decoding, so a tail torn mid-codepoint spoils only itself', async () => {
    const good = encodeJournalLine(entry('🚀 first'));
    const torn = Buffer.from(encodeJournalLine(entry('🚀 second')), 'utf8');
    const cut = torn.indexOf(Buffer.from('🚀', 'utf8')) + 2; // inside the four-byte sequence
    await writeFile(path, Buffer.concat([Buffer.from(good, 'utf8'), torn.subarray(0, cut)]));
    const journal = await fileJournal(path);
    expect(journal.prior().map((e) => e.call.label)).toEqual(['🚀 first']);
    expect(await readFile(path, 'utf8')).toBe(good);
  });

  it('keeps an unterminated last line that decodes, and terminates it', async () => {
    const text = encodeJournalLine(entry('a')) + encodeJournalLine(entry('b')).trimEnd();
    await writeFile(path, text);
    const journal = await fileJournal(path);
    expect(journal.prior().map((e) => e.call.label)).toEqual(['a', 'b']);
    expect(await readFile(path, 'utf8')).toBe(`${text}\n`);
  });

  it('skips metadata lines for replay and preserves them through a repair', async () => {
    const text = `{"v":1,"created_by":"gen-1"}\n\n${encodeJournalLine(entry('a'))}{"v":1,"e":{"ca`;
    await writeFile(path, text);
    const journal = await fileJournal(path);
    expect(journal.prior().map((e) => e.call.label)).toEqual(['a']);
    expect(await readFile(path, 'utf8')).toBe(
      `{"v":1,"created_by":"gen-1"}\n\n${encodeJournalLine(entry('a'))}`,
    );
  });

  it('raises JournalCorrupted with the 1-based line of a bad line before the tail', async () => {
    const a = encodeJournalLine(entry('a'));
    const cases: [Buffer | string, number][] = [
      [`${a}\n{"v":1,"e":{"call":{}}}\n${a}`, 3], // blank lines count
      [`${a}not json\n${a}`, 2],
      [`{"v":2,"e":{}}\n${a}`, 1], // a version this release does not read
      [Buffer.concat([Buffer.from(a), Buffer.from([0xff, 0xfe, 0x0a]), Buffer.from(a)]), 2], // invalid UTF-8
      [`${a}{"v":1,"e":{"call":{}}}\n`, 2], // a whole, terminated line is not a torn tail
    ];
    for (const [content, line] of cases) {
      await writeFile(path, content);
      const error = await fileJournal(path).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(JournalCorrupted);
      expect((error as JournalCorrupted).line).toBe(line);
      expect((error as Error).message).toBe(`journal ${path} is corrupt at line ${line}`);
      expect(Buffer.from(await readFile(path)).equals(Buffer.from(content))).toBe(true); // never repaired
    }
  });

  it('resumes across generations: successes replay, refusals stand, other failures re-run', async () => {
    const outcomes: Record<string, JournalEntry['outcome']> = {
      good: { type: 'Finished', value: 'g', attempt: attemptOf('x', 5, 5) },
      flaky: { type: 'DidNotFinish', failure: AgentFailure.TimedOut, attempt: attemptOf('y', 1, 1) },
      declined: { type: 'DidNotFinish', failure: AgentFailure.Skipped },
    };
    const program = async (wf: Workflow) => {
      const results = [];
      for (const prompt of ['good', 'flaky', 'declined']) {
        results.push(await wf.agent({ prompt, kind: 'k' }).catch((e: Error) => e.message));
      }
      return results;
    };
    const first = new Workflow({
      runner: new ScriptedRunner(
        async (call) => outcomes[(call.input as { query: string }).query] as JournalEntry['outcome'],
      ),
      journal: await fileJournal(path),
    });
    expect(await program(first)).toEqual([
      'g',
      "agent 'flaky' timed out",
      "agent 'declined' was skipped by the user",
    ]);

    const rerun = echoRunner();
    const second = new Workflow({ runner: rerun, journal: await fileJournal(path) });
    expect(await program(second)).toEqual([
      'g',
      { echo: { query: 'flaky' } },
      "agent 'declined' was skipped by the user",
    ]);
    expect(rerun.calls.map((c) => c.label)).toEqual(['flaky']);
    expect(second.callsReplayed()).toBe(2);

    const third = new Workflow({ runner: echoRunner(), journal: await fileJournal(path) });
    expect(await program(third)).toEqual([
      'g',
      { echo: { query: 'flaky' } },
      "agent 'declined' was skipped by the user",
    ]);
    expect(third.callsMade()).toBe(0);
    expect(readJournalEntries(await readFile(path, 'utf8'))).toHaveLength(4);
  });
});
