import { mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostPid, SELF_PID } from '@libos/testkit';
import { Redis } from 'ioredis';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  Cluster,
  describeProcess,
  eventually,
  isAlive,
  procState,
  READ_REQUEST,
  type Scratch,
  scratch,
  shImage,
  sleep,
  WORKER_NAME_VAR,
  waitForFile,
  writeResult,
} from '../src/index.js';

// The console as an operator sees it: Debian's chromium, headless, through playwright-core,
// against a real cluster (redis-server, coordinator, workers, sandboxed children).
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
/** Screenshots land here (the package's `reports`, kept by CI as artifacts). */
const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), '..', 'reports', 'console');

let cluster: Cluster;
let files: Scratch;
let profile = '';
let browser: BrowserContext;
/** Console errors and uncaught exceptions of the page under test: any fails the test. */
let pageErrors: string[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  files = await scratch();
  // A lease long enough that a loaded 2-core machine does not turn a slow renewal into a stale execution.
  cluster = await Cluster.start({ workers: 0, concurrency: 10, workerEnv: { LIBOS_LEASE_MS: '15000' } });
  // One worker after the other: two tsx-started workers starting at once on a loaded 2-core host
  // each took longer than the harness's 25 s to connect (one alone: 14 s at load 23).
  await cluster.startWorker(0);
  await cluster.startWorker(1);
  // Runs until the file `release` exists, after a line on stderr.
  await cluster.admin.putImage('gated', {
    ...shImage(
      `${READ_REQUEST}; echo "gated child waiting" >&2; ${waitForFile('"$2/release"')}; ${writeResult('"status":"completed","output":"released"')}`,
      files.dir,
    ),
  });
  // Ticks for a minute (unless paused), saying so on stderr, its host pid in `ticker.pid`.
  await cluster.admin.putImage('ticker', {
    ...shImage(
      `${READ_REQUEST}; echo ${SELF_PID} > "$2/ticker.pid"; echo "ticker stderr line one" >&2; i=0; while [ $i -lt 1200 ]; do i=$((i+1)); echo $i >> "$2/ticks"; sleep 0.05; done; ${writeResult('"status":"completed","output":"ticked"')}`,
      files.dir,
    ),
    cancel_grace_ms: 200,
  });
  // No worker serves this pool: its children stay runnable (a large tree at no CPU cost).
  await cluster.admin.putImage('unserved', { ...shImage('true'), pool: 'unserved' });
  // Says which worker runs it (the host-gate test SIGKILLs that worker), then sleeps.
  await cluster.admin.putImage('fragile', {
    ...shImage(`${READ_REQUEST}; echo "$${WORKER_NAME_VAR}" > "$2/fragile.worker"; sleep 60`, files.dir),
  });
  profile = await mkdtemp(join(tmpdir(), 'libos-console-browser-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  });
  // the coordinator and two workers, each given 25 s, then images and the browser
}, 120_000);
afterEach(async () => {
  // A failed test leaves its pages open: closed here, so their refreshes cannot touch the next test.
  await Promise.all([...opened].map((p) => p.close()));
  opened.clear();
  const errors = pageErrors;
  if (errors.length) console.error(errors);
  pageErrors = [];
  expect(errors).toEqual([]);
});
afterAll(async () => {
  await browser?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
  const strays = await cluster?.stop();
  await files?.remove();
  expect(strays ?? []).toEqual([]);
});

/** The pages a test opened (closed after it, whether it passed or not). */
const opened = new Set<Page>();

/** Records the page's console errors and uncaught exceptions (any fails the test). */
function watch(page: Page): Page {
  opened.add(page);
  page.on('console', (message) => {
    if (message.type() === 'error') pageErrors.push(`console: ${message.text()} (${page.url()})`);
  });
  page.on('pageerror', (error) => pageErrors.push(`page: ${error.message}`));
  return page;
}

async function newPage(): Promise<Page> {
  return watch(await browser.newPage());
}

async function logIn(page: Page): Promise<void> {
  await browser.clearCookies();
  await page.goto(`${cluster.url}/ui`);
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Processes' }).waitFor();
}

describe('logging in', () => {
  it('shows a one-field form, refuses a wrong token, and a right one sets an httpOnly SameSite=Strict session', async () => {
    const page = await newPage();
    const answer = await page.goto(`${cluster.url}/ui`);
    expect(answer?.status()).toBe(200);
    expect(await page.locator('form input').count()).toBe(1);
    await page.getByLabel('Admin token').fill('not-the-admin-token-at-all');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toBe('That is not the admin token.');
    expect((await browser.cookies()).filter((c) => c.name === 'libos_session')).toEqual([]);
    pageErrors = pageErrors.filter((e) => !/status of 401/.test(e));

    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Processes' }).waitFor();
    const [cookie] = (await browser.cookies()).filter((c) => c.name === 'libos_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(cookie?.value).not.toContain(ADMIN_TOKEN);

    // The page's own calls go to the admin API with the cookie; a state change without the
    // console's header is refused (the CSRF guard), with it allowed.
    const root = await cluster.root('signalled from the page');
    const statuses = await page.evaluate(async (pid) => {
      const url = `/v1/admin/processes/${pid}/signal`;
      const body = JSON.stringify({ signal: 'pause' });
      const bare = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      const read = await fetch(`/v1/admin/processes/${pid}`);
      const guarded = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-libos-console': '1' },
        body,
      });
      return [bare.status, read.status, guarded.status];
    }, root.pid);
    expect(statuses).toEqual([403, 200, 200]);
    pageErrors = pageErrors.filter((e) => !/status of 403/.test(e));

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('Admin token').waitFor();
    pageErrors = pageErrors.filter((e) => !/status of 401/.test(e));
    const after = await page.evaluate(
      async (pid) => (await fetch(`/v1/admin/processes/${pid}`)).status,
      root.pid,
    );
    expect(after).toBe(401);
    pageErrors = [];
    await page.close();
  });

  it('takes HTTP Basic with user admin and the token, as Bull Board does', async () => {
    const basic = (password: string) => `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
    const ok = await fetch(`${cluster.url}/ui/`, { headers: { authorization: basic(ADMIN_TOKEN) } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toMatch(/<div id="app">/);
    expect(ok.headers.get('set-cookie')).toMatch(/libos_session=.*HttpOnly.*SameSite=Strict/i);
    const wrong = await fetch(`${cluster.url}/ui/`, { headers: { authorization: basic('guess') } });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toMatch(/That is not the admin token/);
    expect((await fetch(`${cluster.url}/ui/assets/none.js`)).status).toBe(401);
  });
});

describe('the processes list', () => {
  it("shows each root's children by status from the tree's counts, and searches by pid, goal, image and status", async () => {
    const page = await newPage();
    await logIn(page);
    const root = await cluster.root('a root with counted children');
    const other = await cluster.root('another root');
    // a worker-driven root of an image no worker serves: it stays runnable
    const imaged = await cluster.admin.createProcess({ goal: 'an unserved root', image: 'unserved' });
    const kids = await Promise.all(
      [0, 1, 2].map((i) => root.client.spawn({ goal: `queued ${i}`, image: 'unserved' })),
    );
    await cluster.admin.signalProcess(kids[0]?.pid as string, 'cancel');
    await cluster.admin.signalProcess(kids[1]?.pid as string, 'pause');
    await page.goto(`${cluster.url}/ui/#/`);
    const row = page.locator(`tr[data-pid="${root.pid}"]`);
    await row.locator('td.children [data-total="3"]').waitFor();
    expect(await row.locator('td.children [data-status]').allTextContents()).toEqual([
      '1 runnable',
      '1 paused',
      '1 killed',
    ]);
    // budget burn per dimension (the root's budget counts its subtree: 3 children of its limit)
    expect(await row.locator('.burn').count()).toBeGreaterThanOrEqual(5);
    expect(await row.locator('.burn[aria-label^="children: 3 used"]').count()).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, 'list-1280.png') });
    await page.setViewportSize({ width: 1920, height: 1080 });
    await page.screenshot({ path: join(ARTIFACTS, 'list-1920.png') });

    const search = page.getByLabel('Search pid, goal or image');
    const listed = () =>
      page.locator('table.list tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-pid')));
    await search.fill(root.pid);
    await eventually(async () => ((await listed()).join() === root.pid ? true : undefined), {
      what: 'by pid',
    });
    await search.fill('another ROOT');
    await eventually(async () => ((await listed()).join() === other.pid ? true : undefined), {
      what: 'by goal',
    });
    await search.fill('unserv');
    await eventually(async () => ((await listed()).join() === imaged.pid ? true : undefined), {
      what: 'by image text',
    });
    await search.fill('');
    // the image filter asks the server
    await page.getByLabel('Image (exact)').fill('unserved');
    await page.getByLabel('Image (exact)').press('Enter');
    await eventually(async () => ((await listed()).join() === imaged.pid ? true : undefined), {
      what: 'by image',
    });
    await page.getByLabel('Image (exact)').fill('');
    await page.getByLabel('Image (exact)').press('Enter');
    // the status filter asks the server: the paused roots only (the root above is running)
    await page.getByLabel('Status').selectOption('paused');
    await row.waitFor({ state: 'detached' });
    // the list re-renders from the server's answer: wait until it shows paused roots only
    await eventually(
      async () => {
        const statuses = await page.locator('table.list tbody td .status').allTextContents();
        return statuses.length > 0 && statuses.every((status) => status === 'paused') ? true : undefined;
      },
      { what: 'the paused roots only' },
    );
    await page.getByLabel('Status').selectOption('running');
    await row.waitFor();
    expect(await listed()).toContain(other.pid);
    await page.close();
  });
});

describe('the live tree', () => {
  it('shows a fan-out of 50 children whose statuses change live as they exit, without a reload', async () => {
    const page = await newPage();
    await logIn(page);
    const root = await cluster.root('fan out fifty');
    // Spawned concurrently, so their pids come in any order; the tree lists them by pid (creation).
    const children = (
      await Promise.all(
        Array.from({ length: 50 }, (_, i) => root.client.spawn({ goal: `child ${i}`, image: 'gated' })),
      )
    ).sort((a, b) => Number(a.pid.split('.').pop()) - Number(b.pid.split('.').pop()));
    await page.goto(`${cluster.url}/ui/#/tree/${root.pid}`);
    await page.evaluate(() => {
      (globalThis as unknown as { notReloaded: boolean }).notReloaded = true;
    });
    const nodes = page.locator('li[data-pid]');
    await eventually(async () => ((await nodes.count()) === 51 ? true : undefined), { what: '51 nodes' });
    await eventually(
      async () => ((await page.locator('li[data-status="running"]').count()) >= 10 ? true : undefined),
      { what: 'children running' },
    );
    await page.screenshot({ path: join(ARTIFACTS, 'tree-running.png'), fullPage: true });

    await files.touch('release');
    await eventually(
      async () => ((await page.locator('li[data-status="exited"]').count()) === 50 ? true : undefined),
      { withinMs: 60_000, what: '50 exited in the page' },
    );
    expect(await page.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded)).toBe(
      true,
    );
    for (const child of children.slice(0, 3)) {
      expect(await page.locator(`li[data-pid="${child.pid}"] .outcome`).first().textContent()).toBe(
        'completed',
      );
    }
    await page.screenshot({ path: join(ARTIFACTS, 'tree-exited.png'), fullPage: true });
    await page.setViewportSize({ width: 1920, height: 1080 });
    await page.screenshot({ path: join(ARTIFACTS, 'tree-1920.png') });

    // The keyboard alone: focus the root's pid, ← collapses its children, → expands them, ↓ goes
    // to the first child, ← from there back to the root.
    const rootLink = page.locator(`li[data-pid="${root.pid}"] > .node a.pid`);
    const toggle = page.locator(`li[data-pid="${root.pid}"] > .node button.toggle`);
    await rootLink.focus();
    await page.keyboard.press('ArrowLeft');
    await eventually(async () => ((await nodes.count()) === 1 ? true : undefined), { what: 'collapsed' });
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    expect(await toggle.getAttribute('aria-label')).toBe(`Expand ${root.pid} (50 children)`);
    await page.keyboard.press('ArrowRight');
    await eventually(async () => ((await nodes.count()) === 51 ? true : undefined), { what: 'expanded' });
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
    const focused = () =>
      page.evaluate(
        () =>
          (globalThis as unknown as { document: { activeElement: { textContent: string | null } | null } })
            .document.activeElement?.textContent ?? '',
      );
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toBe(children[0]?.pid);
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toBe(children[1]?.pid);
    await page.keyboard.press('ArrowLeft');
    expect(await focused()).toBe(root.pid);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: new RegExp(`^Process ${root.pid}`) }).waitFor();
    await page.close();
  });
});

describe('a process page', () => {
  it("shows the child's stderr and messages; pause stops its OS process, resume continues it, terminate kills it", async () => {
    const page = await newPage();
    await logIn(page);
    const root = await cluster.root('runs a ticker');
    const child = await root.client.spawn({
      goal: 'tick for the console',
      image: 'ticker',
      inherit_capabilities: [{ resource: 'process:spawn', rights: ['use'] }],
    });
    await root.client.send({ to: child.pid, channel: 'ops', payload: { note: 'hello from the parent' } });
    const osPid = await eventually(async () => {
      const [line] = await files.lines('ticker.pid');
      return line ? hostPid(line) : undefined;
    });

    await page.goto(`${cluster.url}/ui/#/p/${child.pid}`);
    await page
      .getByRole('heading', { name: new RegExp(`Process ${child.pid.replace('.', '\\.')}`) })
      .waitFor();
    await page.locator('pre.logs', { hasText: 'ticker stderr line one' }).waitFor();
    await page.locator('table.messages', { hasText: 'hello from the parent' }).waitFor();
    expect(await page.locator('table.messages').textContent()).toContain('ops');
    // Viewing acknowledges nothing: the page says unread, and so does the mailbox after it.
    expect(await page.locator('table.messages tbody tr').getAttribute('data-acked')).toBe('false');
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.locator('.note', { hasText: '1 unread, 0 acknowledged' }).waitFor();
    const mailbox = await cluster.admin.processMessages(child.pid);
    expect([mailbox.unacked_count, mailbox.acked_count]).toEqual([1, 0]);
    expect(mailbox.messages[0]?.acked).toBe(false);
    // The describe parts: capabilities with delegable and expiry, budget per dimension, the attempt.
    expect(await page.locator('table.capabilities thead').textContent()).toBe(
      'resourcerightsdelegableexpiresconstraints',
    );
    expect(
      await page.locator('table.budget tbody th, table.budget tbody td:first-child').allTextContents(),
    ).toEqual(expect.arrayContaining(['tokens', 'cost_usd', 'steps', 'wall_ms', 'children']));
    const attempt = await page.locator('table.attempts tbody tr').first().locator('td').allTextContents();
    expect(attempt[0]).toBe('1');
    expect(attempt[1]).toMatch(/^e2e-\d$/);
    expect(attempt[4]).toBe('running');
    await page.screenshot({ path: join(ARTIFACTS, 'process.png'), fullPage: true });
    await page.setViewportSize({ width: 1920, height: 1080 });
    await page.screenshot({ path: join(ARTIFACTS, 'process-1920.png'), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });

    // Links both ways with Bull Board: the page links to the launch job, whose card links back.
    const jobLink = page.getByRole('link', { name: 'Launch job on Bull Board' });
    const jobHref = await jobLink.getAttribute('href');
    // The coordinator's redirect names the tree's queue (one here: LIBOS_LAUNCH_SHARDS is 1).
    expect(jobHref).toBe(`/admin/launch-jobs/default/${child.pid}/1`);
    const board = await browser.newPage(); // Bull Board's own page: its console is not ours to judge
    opened.add(board);
    await board.goto(`${cluster.url}${jobHref}`);
    expect(new URL(board.url()).pathname).toBe(
      `/admin/queues/queue/${encodeURIComponent('{launch-default}')}/${child.pid}-a1`,
    );
    const back = board.getByRole('link', { name: `process ${child.pid} (attempt 1)` });
    await back.waitFor();
    expect(await back.getAttribute('href')).toBe(`/ui/#/p/${child.pid}`);
    const [popup] = await Promise.all([browser.waitForEvent('page'), back.click()]);
    watch(popup);
    await popup
      .getByRole('heading', { name: new RegExp(`Process ${child.pid.replace('.', '\\.')}`) })
      .waitFor();
    await Promise.all([popup.close(), board.close()]);

    await page.getByRole('button', { name: 'Pause' }).click();
    await eventually(() => (procState(osPid as number) === 'T' ? true : undefined), {
      what: 'state T',
    }).catch(async (error: unknown) => {
      // A rare failure of full CI runs, not reproduced alone: say what each part holds, for next time.
      const view = await cluster.admin.getProcess(child.pid).catch((e: unknown) => String(e));
      throw new Error(
        `${error instanceof Error ? error.message : String(error)}; the ticker ${osProcessReport(osPid as number)}; ` +
          `the process ${typeof view === 'string' ? view : JSON.stringify({ status: view.status, attempt: view.attempt })}; ` +
          `the page says ${await page.locator('h1').textContent()}`,
      );
    });
    await page.locator('h1 .status-paused').waitFor();
    await sleep(200);
    const frozen = (await files.lines('ticks')).length;
    await sleep(500);
    expect((await files.lines('ticks')).length).toBe(frozen);

    await page.getByRole('button', { name: 'Resume' }).click();
    await eventually(async () => ((await files.lines('ticks')).length > frozen + 2 ? true : undefined), {
      what: 'ticks after resume',
    });
    expect(procState(osPid as number)).not.toBe('T');
    await page.locator('h1 .status-running').waitFor();

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByLabel('Reason').fill('enough ticking');
    await page.getByRole('button', { name: 'Terminate' }).click();
    await page.locator('h1 .status-killed').waitFor({ timeout: 30_000 });
    await eventually(() => (isAlive(osPid as number) ? undefined : true), { what: 'the ticker gone' });
    expect((await cluster.admin.getProcess(child.pid)).outcome).toMatchObject({ type: 'killed' });
    await page.close();
  });
});

describe('a host-gated process', () => {
  it('says what the stale_execution gate means, and asks again before a resume lifts it', async () => {
    // The worker running it SIGKILLed mid-run: once its lease is over, the reaper marks the child
    // stale. (The last test that needs a worker: the scale test's children are never served.)
    const root = await cluster.root('outlives a worker');
    const child = await root.client.spawn({ goal: 'run on a doomed worker', image: 'fragile' });
    const ranOn = await eventually(async () => (await files.lines('fragile.worker'))[0], {
      withinMs: 30_000,
      what: 'the fragile child running',
    });
    await cluster.killWorker([0, 1].find((i) => cluster.workerName(i) === ranOn) as number);
    const stale = await eventually(
      async () => {
        const view = await cluster.admin.getProcess(child.pid);
        return view.resume_gate === 'host' ? view : undefined;
      },
      { withinMs: 60_000, what: 'the reaper to mark it stale (after the 15 s lease)' },
    );
    expect(stale).toMatchObject({ status: 'paused', pause_reason: 'stale_execution', attempt: 1 });

    const page = await newPage();
    await logIn(page);
    await page.goto(`${cluster.url}/ui/#/p/${child.pid}`);
    const note = page.getByRole('note');
    await note.waitFor();
    expect(await note.textContent()).toMatch(
      /stale_execution.*cannot know whether that execution is still running/,
    );
    expect(await page.locator('table.attempts tbody tr').first().locator('td').nth(4).textContent()).toBe(
      'stale_execution',
    );
    await page.screenshot({ path: join(ARTIFACTS, 'process-host-gated.png'), fullPage: true });

    // Dismissed: nothing is sent.
    const asked: string[] = [];
    page.once('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.dismiss();
    });
    await page.getByRole('button', { name: 'Resume' }).click();
    await eventually(() => (asked.length === 1 ? true : undefined), { what: 'the confirmation' });
    expect(asked[0]).toMatch(/stale_execution/);
    expect(asked[0]).toMatch(/only once sure the old execution is gone/);
    expect(asked[0]).toContain(`Resume ${child.pid} as attempt 2?`);
    await sleep(300);
    expect(await cluster.admin.getProcess(child.pid)).toMatchObject({
      status: 'paused',
      resume_gate: 'host',
    });

    // Accepted: the operator's resume lifts the gate and launches attempt 2.
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByLabel('Reason').fill('the host is gone');
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.locator('h1 .status-paused').waitFor({ state: 'detached' });
    // attempt 2 is queued (the surviving worker may already have claimed it)
    const resumed = await cluster.admin.getProcess(child.pid);
    expect(resumed).toMatchObject({ attempt: 2, resume_gate: null });
    expect(['runnable', 'running']).toContain(resumed.status);
    expect(await page.getByRole('note').count()).toBe(0);
    await cluster.admin.signalProcess(child.pid, 'cancel');
    await page.close();
  });
});

describe('scale and cost', () => {
  it('a 1,000-child tree renders from one read and updates only the changed rows; viewers share one Redis subscription', async () => {
    const redis = new Redis(cluster.redis.url, { lazyConnect: true });
    await redis.connect();
    try {
      const root = await cluster.root('a thousand children');
      const children = [];
      for (let batch = 0; batch < 20; batch++) {
        children.push(
          ...(await Promise.all(
            Array.from({ length: 50 }, (_, i) =>
              root.client.spawn({ goal: `waiting child ${batch * 50 + i}`, image: 'unserved' }),
            ),
          )),
        );
      }
      const page = await newPage();
      await logIn(page);
      const clientsBefore = clientCount(await redis.client('LIST'));
      // Every read of a process or its tree the page makes (the list page it leaves may still
      // finish a refresh: its list and counts calls are not about this tree).
      const calls: string[] = [];
      page.on('request', (request) => {
        const url = new URL(request.url());
        if (url.pathname.startsWith('/v1/admin/processes/')) calls.push(url.pathname);
      });

      const started = Date.now();
      await page.goto(`${cluster.url}/ui/#/tree/${root.pid}`);
      await eventually(
        async () => ((await page.locator('li[data-pid]').count()) === 1001 ? true : undefined),
        { withinMs: 60_000, everyMs: 50, what: '1,001 nodes drawn' },
      );
      const renderMs = Date.now() - started;
      // The whole tree came from one read, and no process was read by itself.
      expect(calls.filter((c) => c.endsWith('/tree'))).toEqual([`/v1/admin/processes/${root.pid}/tree`]);
      expect(calls.filter((c) => !c.endsWith('/tree') && !c.endsWith('/events'))).toEqual([]);
      calls.length = 0;

      // Watch what the page rewrites from here: status attributes, and tree nodes (li) added or removed.
      await page.evaluate(() => {
        const g = globalThis as unknown as {
          document: { querySelector(s: string): unknown };
          MutationObserver: new (
            f: (
              records: {
                type: string;
                target: { getAttribute(n: string): string | null };
                addedNodes: Iterable<{ nodeName: string }>;
                removedNodes: Iterable<{ nodeName: string }>;
              }[],
            ) => void,
          ) => { observe(target: unknown, options: object): void };
          statusWrites: Set<string>;
          nodesAddedOrRemoved: number;
        };
        g.statusWrites = new Set();
        g.nodesAddedOrRemoved = 0;
        new g.MutationObserver((records) => {
          for (const r of records) {
            if (r.type === 'attributes') g.statusWrites.add(r.target.getAttribute('data-pid') ?? '?');
            else
              for (const n of [...r.addedNodes, ...r.removedNodes])
                if (n.nodeName === 'LI') g.nodesAddedOrRemoved += 1;
          }
        }).observe(g.document.querySelector('ul.tree'), {
          subtree: true,
          attributes: true,
          attributeFilter: ['data-status'],
          childList: true,
        });
      });

      // Cancel 100 queued children: each dies at once; the page must show all 100 killed.
      await Promise.all(children.slice(0, 100).map((c) => cluster.admin.signalProcess(c.pid, 'cancel')));
      const changed = Date.now();
      await eventually(
        async () => ((await page.locator('li[data-status="killed"]').count()) === 100 ? true : undefined),
        { withinMs: 60_000, everyMs: 50, what: '100 killed drawn' },
      );
      const updateMs = Date.now() - changed;
      // Settle past one throttle period, then count: the live update rewrote the 100 changed rows'
      // status and nothing else (no node added, removed or redrawn), and re-read the tree at most
      // once a second (RELOAD_MS), never once per change or per process.
      await sleep(1_500);
      const writes = await page.evaluate(() => {
        const g = globalThis as unknown as { statusWrites: Set<string>; nodesAddedOrRemoved: number };
        return { statuses: [...g.statusWrites].sort(), nodes: g.nodesAddedOrRemoved };
      });
      expect(writes.statuses).toEqual(
        children
          .slice(0, 100)
          .map((c) => c.pid)
          .sort(),
      );
      expect(writes.nodes).toBe(0);
      const rereads = calls.filter((c) => c.endsWith('/tree')).length;
      expect(rereads).toBeGreaterThanOrEqual(1);
      expect(rereads).toBeLessThanOrEqual(Math.ceil((Date.now() - changed) / 1000) + 1);
      expect(calls.filter((c) => !c.endsWith('/tree') && !c.endsWith('/events'))).toEqual([]);

      console.log(`console scale: ${JSON.stringify({ nodes: 1001, renderMs, updateMs, rereads })}`);
      // Four more viewers of the same tree: still one subscription for the tree and no new Redis
      // connection (the coordinator's wake hub multiplexes every viewer on its one subscriber).
      const others = await Promise.all(Array.from({ length: 4 }, () => newPage()));
      await Promise.all(others.map((p) => p.goto(`${cluster.url}/ui/#/tree/${root.pid}`)));
      for (const [i, other] of others.entries()) {
        await eventually(
          async () => ((await other.locator('li[data-pid]').count()) === 1001 ? true : undefined),
          {
            withinMs: 60_000,
            what: `viewer ${i + 2} to draw 1,001 nodes`,
          },
        ).catch(async (error: unknown) => {
          await other.screenshot({ path: join(ARTIFACTS, `viewer-${i + 2}-failed.png`) });
          throw error;
        });
      }
      const channel = `{${root.pid}}:ev`;
      const shard = (await redis.call('PUBSUB', 'SHARDCHANNELS', `*${channel}`)) as string[];
      expect(shard).toHaveLength(1);
      const [, subscribers] = (await redis.call('PUBSUB', 'SHARDNUMSUB', shard[0] as string)) as [
        string,
        number,
      ];
      expect(Number(subscribers)).toBe(1);
      expect(clientCount(await redis.client('LIST'))).toBe(clientsBefore);

      // The times are figures (printed above), not assertions: on a shared host they measure the
      // load. The bound is what the page does, counted above: one read for the first render, the
      // changed rows' writes and at most a read a second for an update (libs/console README).
      await page.screenshot({ path: join(ARTIFACTS, 'tree-1000.png') });
      await Promise.all([page, ...others].map((p) => p.close()));
    } finally {
      redis.disconnect();
    }
  });
});

function clientCount(list: unknown): number {
  return String(list)
    .split('\n')
    .filter((line) => line.includes('id=') && !line.includes('cmd=client|list')).length;
}

/** A process's state, pending and blocked signals and freezer state, for a failure's message. */
function osProcessReport(pid: number): string {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => new RegExp(`\\n${name}:\\s+(\\S+)`).exec(status)?.[1];
    const freezer = /^\d+:freezer:(.*)$/m.exec(readFileSync(`/proc/${pid}/cgroup`, 'utf8'))?.[1];
    let frozen: string | undefined;
    try {
      if (freezer) frozen = readFileSync(`/sys/fs/cgroup/freezer${freezer}/freezer.state`, 'utf8').trim();
    } catch {}
    return `${describeProcess(pid)} (SigPnd ${field('SigPnd')}, ShdPnd ${field('ShdPnd')}, SigBlk ${field('SigBlk')}, freezer ${freezer ?? 'none'} ${frozen ?? ''})`;
  } catch {
    return `${pid} (gone)`;
  }
}
