import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/cluster/redis-server.js';
import { CLI_FROM_SOURCE } from './helpers.js';

const ADMIN_TOKEN = `coordinator-outage-token-${process.pid}-0123456789abcdef`;
const started: ChildProcess[] = [];

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** A plain redis-server on `port`, without persistence. */
async function redisServer(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  started.push(child);
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const probe = spawn('redis-cli', ['-p', String(port), 'ping'], { stdio: ['ignore', 'pipe', 'ignore'] });
      let out = '';
      probe.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      probe.once('exit', () => resolve(out.includes('PONG')));
    });
    if (ok) return child;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('redis-server did not start');
}

/** `libos coordinator` against `redis://127.0.0.1:<redisPort>`, its log lines collected. */
function coordinator(redisPort: number, port: number) {
  return part('coordinator', redisPort, { LIBOS_ADMIN_TOKEN: ADMIN_TOKEN, LIBOS_PORT: String(port) });
}

/** `libos <command>` against `redis://127.0.0.1:<redisPort>`, every line it writes collected. */
function part(
  command: 'coordinator' | 'worker',
  redisPort: number,
  env: Record<string, string>,
): { child: ChildProcess; lines: () => { msg: string; err?: unknown }[] } {
  const child = spawn(process.execPath, [...CLI_FROM_SOURCE, command], {
    env: {
      PATH: process.env.PATH,
      LIBOS_REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      LIBOS_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let text = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return {
    child,
    lines: () =>
      text
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          try {
            return JSON.parse(line) as { msg: string; err?: unknown };
          } catch {
            return { msg: line };
          }
        }),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (a tsx-started part is slow to start on a loaded host) until `lines` has a line `msg`. */
async function lineSeen(lines: () => { msg: string }[], msg: string, withinMs = 20_000): Promise<void> {
  const until = Date.now() + withinMs;
  while (!lines().some((l) => l.msg === msg) && Date.now() < until) await sleep(100);
}

afterAll(async () => {
  for (const child of started) child.kill('SIGTERM');
  await Promise.all(started.map(exited));
}, 30_000);

describe('libos coordinator with Redis down', () => {
  it('logs one line when Redis is unreachable, not one stack per retry', async () => {
    const part = coordinator(await freePort(), await freePort());
    await lineSeen(part.lines, 'redis unreachable: retrying');
    // Several retry intervals more: still that one line.
    await sleep(3_000);
    const lines = part.lines();
    const redisLines = lines.filter((l) => /redis/i.test(l.msg));
    expect(redisLines.map((l) => l.msg)).toEqual(['redis unreachable: retrying']);
    expect(JSON.stringify(lines)).not.toMatch(/"stack"/);
  }, 45_000);

  it('logs the state changes: unreachable once, then reachable again', async () => {
    const redisPort = await freePort();
    let redis = await redisServer(redisPort);
    const part = coordinator(redisPort, await freePort());
    await sleep(1_500);
    expect(part.lines().filter((l) => /redis/i.test(l.msg))).toEqual([]);
    redis.kill('SIGKILL');
    await exited(redis);
    await lineSeen(part.lines, 'redis unreachable: retrying');
    await sleep(3_000);
    expect(
      part
        .lines()
        .filter((l) => /redis/i.test(l.msg))
        .map((l) => l.msg),
    ).toEqual(['redis unreachable: retrying']);
    redis = await redisServer(redisPort);
    await lineSeen(part.lines, 'redis reachable again');
    expect(
      part
        .lines()
        .filter((l) => /redis/i.test(l.msg))
        .map((l) => l.msg),
    ).toEqual(['redis unreachable: retrying', 'redis reachable again']);
    expect(JSON.stringify(part.lines())).not.toMatch(/"stack"/);
  }, 60_000);
});

describe('libos worker with Redis down', () => {
  it('logs one line when Redis is unreachable, not a line (or a stack on stderr) per retry', async () => {
    const worker = part('worker', await freePort(), { LIBOS_PUBLIC_URL: 'http://127.0.0.1:9' });
    await lineSeen(worker.lines, 'redis unreachable: retrying');
    // Several reconnects of both connections and BullMQ's retries: still that one line.
    await sleep(3_000);
    const lines = worker.lines();
    expect(lines.filter((l) => /redis|queue/i.test(l.msg)).map((l) => l.msg)).toEqual([
      'redis unreachable: retrying',
    ]);
    // nothing but JSON lines: no error printed whole by a library
    expect(lines.filter((l) => l.msg.startsWith('Error') || /^\s/.test(l.msg))).toEqual([]);
  }, 45_000);
});
