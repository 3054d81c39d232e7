import { mkdirSync } from 'node:fs';
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
  eventually,
  isAlive,
  procState,
  READ_REQUEST,
  type Scratch,
  scratch,
  shImage,
  sleep,
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
  cluster = await Cluster.start({ workers: 2, concurrency: 10, workerEnv: { LIBOS_LEASE_MS: '15000' } });
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
  profile = await mkdtemp(join(tmpdir(), 'libos-console-browser-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  });
});
afterEach(() => {
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

async function newPage(): Promise<Page> {
  const page = await browser.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error') pageErrors.push(`console: ${message.text()} (${page.url()})`);
  });
  page.on('pageerror', (error) => pageErrors.push(`page: ${error.message}`));
  return page;
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

describe('the live tree', () => {
  it('shows a fan-out of 50 children whose statuses change live as they exit, without a reload', async () => {
    const page = await newPage();
    await logIn(page);
    const root = await cluster.root('fan out fifty');
    const children = await Promise.all(
      Array.from({ length: 50 }, (_, i) => root.client.spawn({ goal: `child ${i}`, image: 'gated' })),
    );
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
    await page.close();
  });
});

describe('a process page', () => {
  it("shows the child's stderr and messages; pause stops its OS process, resume continues it, terminate kills it", async () => {
    const page = await newPage();
    await logIn(page);
    const root = await cluster.root('runs a ticker');
    const child = await root.client.spawn({ goal: 'tick for the console', image: 'ticker' });
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
    await page.screenshot({ path: join(ARTIFACTS, 'process.png'), fullPage: true });

    await page.getByRole('button', { name: 'Pause' }).click();
    await eventually(() => (procState(osPid as number) === 'T' ? true : undefined), { what: 'state T' });
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

describe('scale and cost', () => {
  it('a 1,000-child tree renders and updates within bounds; viewers share one Redis subscription', async () => {
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

      const started = Date.now();
      await page.goto(`${cluster.url}/ui/#/tree/${root.pid}`);
      await eventually(
        async () => ((await page.locator('li[data-pid]').count()) === 1001 ? true : undefined),
        {
          withinMs: 30_000,
          everyMs: 50,
        },
      );
      const renderMs = Date.now() - started;

      // Cancel 100 queued children: each dies at once; the page must show all 100 killed.
      await Promise.all(children.slice(0, 100).map((c) => cluster.admin.signalProcess(c.pid, 'cancel')));
      const changed = Date.now();
      await eventually(
        async () => ((await page.locator('li[data-status="killed"]').count()) === 100 ? true : undefined),
        { withinMs: 30_000, everyMs: 50 },
      );
      const updateMs = Date.now() - changed;

      console.log(`console scale: ${JSON.stringify({ nodes: 1001, renderMs, updateMs })}`);
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

      // Bounds (2-core CI machine, shared): first render of 1,001 nodes within 10 s, 100 live
      // status changes shown within 5 s of the last signal's answer.
      expect(renderMs).toBeLessThan(10_000);
      expect(updateMs).toBeLessThan(5_000);
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
