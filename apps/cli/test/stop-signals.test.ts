import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@libos/coordinator';
import { AdminClient } from '@libos/sdk';
import { startRedis, type TestRedis } from '@libos/testkit';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLI_FROM_SOURCE } from './helpers.js';

const ADMIN_TOKEN = `stop-signals-token-${process.pid}-0123456789abcdef`;
let redis: TestRedis;
let coordinator: RunningCoordinator;
let scratch: string;

beforeAll(async () => {
  redis = await startRedis();
  coordinator = await startCoordinator(
    loadCoordinatorConfig({ LIBOS_REDIS_URL: redis.url, LIBOS_ADMIN_TOKEN: ADMIN_TOKEN, LIBOS_PORT: '0' }),
    { logger: pino({ level: 'silent' }) },
  );
  scratch = mkdtempSync(join(tmpdir(), 'stop-signals-'));
});
afterAll(async () => {
  await coordinator?.close();
  await redis?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('Z');
  } catch {
    return false;
  }
}

async function until<T>(what: string, probe: () => T | undefined, ms = 30_000): Promise<T> {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

it('libos worker: the first Ctrl-C stops gracefully, a second exits at once and kills its children', async () => {
  const admin = new AdminClient({ url: coordinator.url, adminToken: ADMIN_TOKEN });
  const pidFile = join(scratch, 'child.pid');
  // A child that records its pid and would run for five minutes.
  await admin.putImage('stop-signals-sleeper', {
    command: 'sh',
    args: ['-c', `read request; echo $$ > ${pidFile}; exec sleep 300`, '{result_file}'],
  });
  const worker: ChildProcess = spawn(
    process.execPath,
    [...CLI_FROM_SOURCE, 'worker', '--isolation', 'none'],
    {
      env: {
        PATH: process.env.PATH,
        LIBOS_REDIS_URL: redis.url,
        LIBOS_URL: coordinator.url,
        LIBOS_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  worker.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code)));
  try {
    await admin.createProcess({ goal: 'sleep', image: 'stop-signals-sleeper', launch: true });
    const childPid = await until('the child to start', () => {
      try {
        return Number(readFileSync(pidFile, 'utf8').trim()) || undefined;
      } catch {
        return undefined;
      }
    });
    expect(alive(childPid)).toBe(true);

    worker.kill('SIGINT');
    await until('the graceful stop to begin', () =>
      stderr.includes('stopping (SIGINT)') ? true : undefined,
    );
    // A graceful stop waits for the running child: the worker is still there.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(worker.exitCode).toBeNull();

    worker.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toContain('SIGINT again: stopping now');
    await until('the child to be killed', () => (alive(childPid) ? undefined : true), 5_000);
  } finally {
    worker.kill('SIGKILL');
  }
}, 60_000);
