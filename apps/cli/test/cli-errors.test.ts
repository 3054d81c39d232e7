import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/cluster/redis-server.js';
import { CLI_FROM_SOURCE, childrenOf } from './helpers.js';

const ADMIN_TOKEN = `cli-errors-admin-token-${process.pid}-0123456789abcdef`;

/** The environment without the operator's libos settings (a developer's shell may have some). */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('LIBOS_')) env[name] = value;
  return { ...env, LIBOS_LOG_LEVEL: 'warn', ...extra };
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `libos …args` to its end. */
function libos(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...CLI_FROM_SOURCE, ...args],
      { env: cleanEnv(env) },
      (error, stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

/** The one error line: exactly one line, `libos: …`, no stack, no zod issue array. */
function expectOneLine(ran: Ran): string {
  expect(ran.code).not.toBe(0);
  const lines = ran.stderr.trimEnd().split('\n');
  expect(lines, ran.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^libos: /);
  expect(ran.stderr).not.toMatch(/\n\s+at |ZodError|"code":|\[\s*\{/);
  return lines[0]!;
}

/** Whether `pid` still runs (a zombie has exited). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

async function until(what: string, probe: () => boolean, withinMs = 20_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface Up {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
  stderr: () => string;
}

/** `libos up` in `dir`, resolved once it printed its JSON. */
async function startUp(dir: string, port: number): Promise<Up> {
  const child = spawn(
    process.execPath,
    [...CLI_FROM_SOURCE, '--dir', dir, '--json', 'up', '--workers', '1', '--port', String(port)],
    { env: cleanEnv({ LIBOS_ADMIN_TOKEN: ADMIN_TOKEN }), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const announced = await new Promise<{ url: string }>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      try {
        resolve(JSON.parse(stdout));
      } catch {}
    });
    exited.then((code) => reject(new Error(`libos up exited (${code}) before it was up: ${stderr}`)));
  });
  return { child, url: announced.url, exited, stderr: () => stderr };
}

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'libos-cli-errors-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('usage errors are one line', () => {
  it('a bad signal name names the valid ones, without a zod dump', async () => {
    const line = expectOneLine(await libos(['--dir', join(root, 'none'), 'signal', 'p1', 'bogus']));
    expect(line).toBe('libos: unknown signal "bogus": use one of pause, resume, cancel, terminate');
  });

  it('a missing argument or an unknown command points at --help instead of printing it', async () => {
    expect(expectOneLine(await libos(['signal']))).toBe(
      "libos: missing required argument 'pid' (see `libos signal --help`)",
    );
    // a word near no command: commander suggests a close one (`bogus` → "Did you mean logs?")
    expect(expectOneLine(await libos(['frobnicate']))).toMatch(
      /^libos: unknown command 'frobnicate' \(see `libos --help`\)$/,
    );
  });

  it('bad JSON options say what to pass, with an example for that option', async () => {
    const budget = expectOneLine(await libos(['--admin-token', 'x', 'run', 'img', '-g', 'g', '-b', '{']));
    expect(budget).toMatch(/^libos: --budget must be JSON \(.+\), e\.g\. '\{"wall_ms":60000\}'$/);
    const input = expectOneLine(
      await libos(['--admin-token', 'x', 'run', 'img', '-g', 'g', '--input', '{bad']),
    );
    expect(input).toMatch(/^libos: --input must be JSON \(.+\), e\.g\. '\{"query":"…"\}'$/);
  });

  it('a reader that stops early (`libos … | head`) is no error', async () => {
    const child = spawn(process.execPath, [...CLI_FROM_SOURCE, 'completion', 'bash'], {
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.destroy(); // gone before the first write
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('--version prints the version of apps/cli/package.json', async () => {
    const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));
    const ran = await libos(['--version']);
    expect(ran.code).toBe(0);
    expect(ran.stdout.trim()).toBe(pkg.version);
  });
});

describe('a stale .libos/cluster.json', () => {
  it('naming a `libos up` that is gone says there is no cluster, and how to start one', async () => {
    const dir = join(root, 'stale');
    const port = await freePort();
    // A pid that no longer runs: a child that has exited and been reaped.
    const gone = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => gone.once('exit', resolve));
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'cluster.json'),
      JSON.stringify({
        url: `http://127.0.0.1:${port}`,
        redis_url: '/nowhere.sock',
        admin_token_file: join(dir, 'admin-token'),
        pid: gone.pid,
        started_at: new Date().toISOString(),
      }),
    );
    await writeFile(join(dir, 'admin-token'), `${ADMIN_TOKEN}\n`);
    const line = expectOneLine(await libos(['--dir', dir, 'ps']));
    expect(line).toBe(
      `libos: no cluster at http://127.0.0.1:${port} (from ${join(dir, 'cluster.json')}): start one with \`libos up\`, or point --url / LIBOS_URL at a running coordinator`,
    );
  });

  it('an unreachable --url says so in one line', async () => {
    const port = await freePort();
    const line = expectOneLine(
      await libos(['--url', `http://127.0.0.1:${port}`, '--admin-token', 'x', 'ps']),
    );
    expect(line).toMatch(
      new RegExp(`^libos: cannot reach the coordinator at http://127.0.0.1:${port} \\(from --url\\)`),
    );
    // following a log does not wait forever for a coordinator it never reached
    const follow = expectOneLine(
      await libos(['--url', `http://127.0.0.1:${port}`, '--admin-token', 'x', 'logs', 'r1', '-f']),
    );
    expect(follow).toMatch(/^libos: cannot reach the coordinator at /);
  });
});

describe('libos up refuses a port in use', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    server = createServer();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('before printing or starting anything', async () => {
    const dir = join(root, 'busy');
    const ran = await libos(['--dir', dir, 'up', '--port', String(port)]);
    expect(ran.stdout).toBe('');
    expect(expectOneLine(ran)).toBe(`libos: port ${port} is in use: pick another with --port`);
    expect(existsSync(join(dir, 'redis'))).toBe(false);
  });
});

describe('against a running cluster', () => {
  let dir: string;
  let up: Up;
  let parts: { pid: number; cmdline: string }[];

  beforeAll(async () => {
    dir = join(root, 'cluster');
    up = await startUp(dir, await freePort());
    parts = childrenOf(up.child.pid!);
  }, 60_000);
  afterAll(async () => {
    if (up && up.child.exitCode === null) {
      up.child.kill('SIGTERM');
      await up.exited;
    }
  }, 60_000);

  it('the right admin token works', async () => {
    const ran = await libos(['--dir', dir, '--json', 'ps']);
    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(0);
  });

  it('a wrong admin token is called wrong, and where it came from', async () => {
    const flag = expectOneLine(await libos(['--dir', dir, '--admin-token', 'not-the-admin-token', 'ps']));
    expect(flag).toMatch(/^libos: wrong admin token \(from --admin-token\): /);
    expect(flag).toContain('--admin-token, LIBOS_ADMIN_TOKEN_FILE or LIBOS_ADMIN_TOKEN');
    const env = expectOneLine(
      await libos(['--dir', dir, 'ps'], { LIBOS_ADMIN_TOKEN: 'not-the-admin-token' }),
    );
    expect(env).toMatch(/^libos: wrong admin token \(from LIBOS_ADMIN_TOKEN\): /);
  }, 60_000); // two CLI starts: ~10 s each on a loaded 2-core host

  it('a missing admin token is called missing', async () => {
    const line = expectOneLine(await libos(['--dir', join(root, 'empty'), '--url', up.url, 'ps']));
    expect(line).toBe(
      'libos: no admin token: pass --admin-token, set LIBOS_ADMIN_TOKEN_FILE (or LIBOS_ADMIN_TOKEN), or run `libos up` here first',
    );
  });

  it('an admin token file named by LIBOS_ADMIN_TOKEN_FILE is used; with LIBOS_ADMIN_TOKEN too, or unreadable, it says so', async () => {
    const elsewhere = ['--dir', join(root, 'empty'), '--url', up.url, '--json', 'ps'];
    const file = join(dir, 'admin-token');
    const ran = await libos(elsewhere, { LIBOS_ADMIN_TOKEN_FILE: file });
    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(0);
    expect(
      expectOneLine(await libos(elsewhere, { LIBOS_ADMIN_TOKEN_FILE: file, LIBOS_ADMIN_TOKEN: 'x' })),
    ).toBe('libos: set LIBOS_ADMIN_TOKEN or LIBOS_ADMIN_TOKEN_FILE, not both');
    const missing = join(root, 'no-such-token');
    expect(expectOneLine(await libos(elsewhere, { LIBOS_ADMIN_TOKEN_FILE: missing }))).toBe(
      `libos: cannot read ${missing}: no such file or directory`,
    );
  }, 60_000); // three CLI starts

  it('a second `libos up` from the same directory says a cluster is running there', async () => {
    const line = expectOneLine(await libos(['--dir', dir, 'up', '--port', String(await freePort())]));
    expect(line).toBe(
      `libos: a cluster from ${dir} is already running at ${up.url} (pid ${up.child.pid}): use it, stop it (Ctrl-C where it runs, or kill ${up.child.pid}), or start another with --dir and --port`,
    );
  });

  it('a bad image name says what a name may be', async () => {
    const line = expectOneLine(
      await libos([
        '--dir',
        dir,
        'images',
        'put',
        'Bad Name!',
        '--command',
        'true',
        '--arg',
        '{result_file}',
      ]),
    );
    expect(line).toContain('1-64 letters, digits, ".", "_" or "-", starting with a letter or digit');
  });

  it('a refusal of the coordinator is one line', async () => {
    const line = expectOneLine(await libos(['--dir', dir, 'signal', 'p999999', 'pause']));
    expect(line).not.toContain('\n');
  });

  it('a second SIGINT stops at once, leaving no coordinator, worker or redis-server behind', async () => {
    expect(parts.some((p) => p.cmdline.startsWith('redis-server'))).toBe(true);
    expect(parts.some((p) => / coordinator/.test(p.cmdline))).toBe(true);
    expect(parts.every((p) => running(p.pid))).toBe(true);
    // The second SIGINT as soon as the first is handled (two pending at once are delivered as one).
    const handled = new Promise<void>((resolve) => {
      const onData = () => {
        if (!up.stderr().includes('stopping (')) return;
        up.child.stderr!.off('data', onData);
        resolve();
      };
      up.child.stderr!.on('data', onData);
    });
    up.child.kill('SIGINT');
    await handled;
    up.child.kill('SIGINT');
    expect(await up.exited).toBe(130);
    await until('every part of libos up to be gone', () => parts.every((p) => !running(p.pid)));
    // Its cluster.json now names nothing.
    const line = expectOneLine(await libos(['--dir', dir, 'ps']));
    expect(line).toBe(
      `libos: no cluster at ${up.url} (from ${join(dir, 'cluster.json')}): start one with \`libos up\`, or point --url / LIBOS_URL at a running coordinator`,
    );
  }, 30_000);
});
