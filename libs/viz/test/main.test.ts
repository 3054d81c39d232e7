import { existsSync } from 'node:fs';
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { vizMain } from '../src/index.js';
import { finished, line, sampleJournal } from './fixtures.js';

class Capture {
  text = '';
  write(chunk: string) {
    this.text += chunk;
  }
}

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('vizMain', () => {
  let dir = '';
  let stdout = new Capture();
  let stderr = new Capture();
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'libos-viz-test-'));
    stdout = new Capture();
    stderr = new Capture();
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const viz = (...argv: string[]) => vizMain(argv, { stdout, stderr });

  it('writes <journal>.html by default, or the page named, and says so', async () => {
    const journal = join(dir, 'run.jsonl');
    await writeFile(journal, sampleJournal());
    expect(await viz(journal)).toBe(0);
    expect(stdout.text).toBe(`wrote ${journal}.html: 4 entries, 1 derived edge(s)\n`);
    expect(await readFile(`${journal}.html`, 'utf8')).toContain('4 recorded attempt(s) · 1 dataflow edge(s)');
    const out = join(dir, 'page.html');
    expect(await viz(journal, out)).toBe(0);
    expect(existsSync(out)).toBe(true);
  });

  it('a missing or empty journal: says so, leaves the existing page alone, exit 0', async () => {
    const journal = join(dir, 'empty.jsonl');
    const out = join(dir, 'page.html');
    await writeFile(out, 'the old page');
    expect(await viz(journal, out)).toBe(0);
    await writeFile(journal, '\n{"v":1,"meta":{}}\n');
    expect(await viz(journal, out)).toBe(0);
    expect(stdout.text).toBe(`journal ${journal} holds no entries yet\n`.repeat(2));
    expect(await readFile(out, 'utf8')).toBe('the old page');
  });

  it('a render error is printed, not reflected in the exit status', async () => {
    const journal = join(dir, 'run.jsonl');
    await writeFile(journal, sampleJournal());
    const out = join(dir, 'no-such-dir', 'page.html');
    expect(await viz(journal, out)).toBe(0);
    expect(stderr.text).toMatch(new RegExp(`^libos viz: cannot write ${out}: .*ENOENT`));
  });

  it('usage errors exit 2; --help exits 0', async () => {
    expect(await viz()).toBe(2);
    expect(stderr.text).toContain('libos viz: a journal path is required\nUsage: libos viz <journal.jsonl>');
    expect(await viz('a.jsonl', '--wtach')).toBe(2);
    expect(await viz('a', 'b', 'c')).toBe(2);
    expect(await viz('--help')).toBe(0);
    expect(stdout.text).toContain('Usage: libos viz');
  });

  it('--watch re-renders as a live journal grows, with a meta refresh, and never touches the journal', async () => {
    const journal = join(dir, 'live.jsonl');
    const out = join(dir, 'live.html');
    const stop = new AbortController();
    const watching = vizMain([journal, out, '--watch'], {
      stdout,
      stderr,
      signal: stop.signal,
      intervalMs: 100,
    });
    await until(async () => stdout.text.includes('holds no entries yet'));

    // A live writer: one whole line and a torn tail, which viz must skip and must not repair.
    const torn = `${line(finished('first', 'q', 'one'))}\n${line(finished('second', 'q', 'two')).slice(0, 30)}`;
    await writeFile(journal, torn);
    await until(
      async () => existsSync(out) && (await readFile(out, 'utf8')).includes('1 recorded attempt(s)'),
    );
    const page = await readFile(out, 'utf8');
    expect(page).toContain('<meta http-equiv="refresh" content="2">');
    expect(await readFile(journal, 'utf8')).toBe(torn);

    await writeFile(
      journal,
      `${line(finished('first', 'q', 'one'))}\n${line(finished('second', 'q', 'two'))}\n`,
    );
    await appendFile(journal, `${line(finished('third', 'q', 'three'))}\n`);
    await until(async () => (await readFile(out, 'utf8')).includes('3 recorded attempt(s)'));

    stop.abort();
    expect(await watching).toBe(0);
    expect(stderr.text).toBe('');
  });
});
