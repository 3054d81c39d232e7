import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vizMain } from '../src/index.js';
import { LONG_ANSWER, SPECIAL_ANSWER, sampleJournal } from './fixtures.js';

// The page as a reader sees it: Debian's chromium, headless, through playwright-core.
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

describe('the rendered page in chromium', () => {
  let dir = '';
  let browser: BrowserContext;
  let pageUrl = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'libos-viz-browser-'));
    const journal = join(dir, 'run.jsonl');
    await writeFile(journal, sampleJournal());
    const sink = { write: () => true };
    expect(await vizMain([journal], { stdout: sink, stderr: sink })).toBe(0);
    pageUrl = pathToFileURL(`${journal}.html`).href;
    // A fresh profile directory: playwright passes it as --user-data-dir.
    browser = await chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath: '/usr/bin/chromium',
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 900 },
    });
  });

  afterAll(async () => {
    await browser?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('shows one ledger row per entry, the edge count, escaped outputs, the newest panel open', async () => {
    const page = await browser.newPage();
    await page.goto(pageUrl);

    expect(await page.locator('.counts').textContent()).toBe('4 recorded attempt(s) · 1 dataflow edge(s)');
    expect(await page.locator('svg.dataflow path.edge').count()).toBe(1);
    expect(await page.locator('svg.dataflow circle.node').count()).toBe(4);

    const rows = page.locator('table.ledger tbody tr');
    expect(await rows.count()).toBe(4);
    const cells: string[][] = [];
    for (const row of await rows.all()) cells.push(await row.locator('td').allTextContents());
    expect(cells).toEqual([
      ['1', 'scout the queue', 'explore', 'Finished', '3', '4250', '1500'],
      ['2', 'probe limits', 'explore', 'DidNotFinish', '1', '', '420'],
      ['3', 'summarise', 'write', 'Finished', '2', '', '2500'],
      ['4', 'render <html>', '', 'Finished', '1', '', '55'],
    ]);
    // The biggest spender's bar is full; the others are scaled to it.
    const fills = await page.locator('.fill').all();
    const widths = await Promise.all(fills.map((fill) => fill.getAttribute('style')));
    expect(widths).toEqual(['width:60%', 'width:16%', 'width:100%', 'width:2%']);

    // HTML specials in an answer are text, never markup. (Page code is passed as source text:
    // this package is typed without the DOM.)
    expect(await page.evaluate("'pwned' in window")).toBe(false);
    expect(await page.locator('.out script, .out b').count()).toBe(0);
    const outputs = await page.locator('details .out').allTextContents();
    expect(outputs).toEqual([
      LONG_ANSWER,
      'failed: claude: error_during_execution: boom',
      'one queue per pool',
      SPECIAL_ANSWER,
    ]);
    const panels = await page.locator('details').all();
    const open = await Promise.all(panels.map((panel) => panel.getAttribute('open')));
    expect(open).toEqual([null, null, null, '']);

    const shot = join(tmpdir(), 'libos-viz-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.screenshot({ path: join(tmpdir(), 'libos-viz-page-dark.png'), fullPage: true });
    const background = await page.evaluate('getComputedStyle(document.body).backgroundColor');
    expect(background).toBe('rgb(20, 22, 26)');
    await page.close();
  });
});
