import { redactRedisUrl } from '@libos/redis';
import type { Command } from 'commander';
import { startEmbedded } from '../cluster/embedded.js';
import { portFree } from '../cluster/redis-server.js';
import { stopSignals } from '../cluster/signals.js';
import { readClusterFile, stateDir } from '../cluster/state-dir.js';
import { alive, type GlobalOptions } from '../context.js';
import { CliError } from '../errors.js';
import { emit, paint } from '../output.js';

/**
 * Resolves at the first SIGINT, SIGTERM or SIGHUP (a graceful stop). A second one exits at once:
 * `process.exit` runs the exit hooks that SIGKILL every child's process group, where the default
 * action of an unhandled signal would leave them running.
 */
function untilStopped(what: string): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (!stopping) {
        stopping = true;
        process.stderr.write(`${what}: stopping (${signal}); ${signal} again stops at once\n`);
        return resolve(signal);
      }
      process.stderr.write(`${what}: ${signal} again: stopping now\n`);
      process.exit(130);
    };
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
  });
}

function wholeNumber(what: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new CliError(`${what} must be a whole number from ${min} to ${max}, not "${text}"`);
  return value;
}

export function registerClusterCommands(program: Command): void {
  program
    .command('up')
    .description('run a whole single-node cluster in the foreground: Redis, a coordinator and N workers')
    .option('--workers <n>', 'how many worker processes', '2')
    .option('--concurrency <n>', 'children each worker runs at once')
    .option('--port <port>', 'coordinator port', process.env.LIBOS_PORT ?? '7070')
    // No default shown from LIBOS_REDIS_URL: `--help` would print a password in it.
    .option(
      '--redis-url <url>',
      'use this Redis instead of a private redis-server (default: LIBOS_REDIS_URL)',
    )
    .action(async (opts: { workers: string; concurrency?: string; port: string; redisUrl?: string }) => {
      const global = program.opts<GlobalOptions>();
      const dir = stateDir(global.dir);
      const port = wholeNumber('--port', opts.port, 1, 65_535);
      const workers = wholeNumber('--workers', opts.workers, 0, 1_000);
      // Before anything starts: otherwise Redis starts, then the coordinator fails to listen.
      const running = await readClusterFile(dir);
      if (running && alive(running.pid)) {
        throw new CliError(
          `a cluster from ${dir} is already running at ${running.url} (pid ${running.pid}): use it, stop it (Ctrl-C where it runs, or kill ${running.pid}), or start another with --dir and --port`,
        );
      }
      if (!(await portFree(port))) throw new CliError(`port ${port} is in use: pick another with --port`);
      const signals = stopSignals();
      const cluster = await startEmbedded({
        dir,
        workers,
        port,
        redisUrl: opts.redisUrl ?? process.env.LIBOS_REDIS_URL,
        concurrency: opts.concurrency ? Number(opts.concurrency) : undefined,
      });
      signals.up();
      const redis = redactRedisUrl(cluster.redisUrl);
      emit(
        global.json,
        {
          url: cluster.url,
          console_url: `${cluster.url}/ui`,
          admin_token_file: cluster.adminTokenFile,
          redis_url: redis,
          ...(cluster.redisPasswordFile ? { redis_password_file: cluster.redisPasswordFile } : {}),
        },
        () =>
          [
            `${paint('green', 'libos is up')}: coordinator ${cluster.url}, ${opts.workers} worker(s)`,
            `admin token: ${cluster.adminTokenFile}`,
            `console:     ${cluster.url}/ui (log in with the admin token)`,
            `dashboard:   ${cluster.url}/admin/queues (user admin, password: the admin token)`,
            `redis:       ${redis}${cluster.redisPasswordFile ? ` (password: ${cluster.redisPasswordFile})` : ''}`,
            'Ctrl-C stops everything.',
          ].join('\n'),
      );
      const crashed = cluster.exited.then((why) => ({ why, crashed: true }));
      const stopped = signals.first.then((why) => ({ why, crashed: false }));
      const ending = await Promise.race([stopped, crashed]);
      process.stderr.write(`stopping (${ending.why})…\n`);
      await cluster.stop();
      if (ending.crashed) process.exitCode = 1;
    });

  program
    .command('coordinator')
    .description('run one coordinator (HTTP API, launches, reaper) against LIBOS_REDIS_URL')
    .option('--port <port>', 'listen port (LIBOS_PORT)')
    .option('--host <host>', 'listen address (LIBOS_HOST, default 127.0.0.1)')
    .action(async (opts: { port?: string; host?: string }) => {
      const { loadCoordinatorConfig, startCoordinator } = await import('@libos/coordinator');
      const config = loadCoordinatorConfig({
        ...process.env,
        ...(opts.port ? { LIBOS_PORT: opts.port } : {}),
        ...(opts.host ? { LIBOS_HOST: opts.host } : {}),
      });
      const coordinator = await startCoordinator(config);
      // A part whose Redis connection ended for good exits at once, as after a crash.
      if (
        (await Promise.race([untilStopped('libos coordinator'), coordinator.lost.then(() => 'lost')])) ===
        'lost'
      )
        process.exit(1);
      await coordinator.close();
    });

  program
    .command('worker')
    .description('run one worker: takes launches from the pools’ queues and runs contract children')
    .option('--pools <pools>', 'comma-separated pools (LIBOS_POOLS, default "default")')
    .option('--concurrency <n>', 'children run at once per pool (LIBOS_CONCURRENCY)')
    .option('--id <id>', 'worker id (default host:pid)')
    .option(
      '--isolation <mode>',
      'strict: refuse to start unless every containment holds; auto: what the host offers; none (LIBOS_ISOLATION, default auto)',
    )
    .action(async (opts: { pools?: string; concurrency?: string; id?: string; isolation?: string }) => {
      const { loadWorkerConfig, startWorker } = await import('@libos/worker');
      const config = loadWorkerConfig({
        ...process.env,
        ...(opts.pools ? { LIBOS_POOLS: opts.pools } : {}),
        ...(opts.concurrency ? { LIBOS_CONCURRENCY: opts.concurrency } : {}),
        ...(opts.id ? { LIBOS_WORKER_ID: opts.id } : {}),
        ...(opts.isolation ? { LIBOS_ISOLATION: opts.isolation } : {}),
      });
      const worker = await startWorker(config);
      // A part whose Redis connection ended for good exits at once, as after a crash.
      if ((await Promise.race([untilStopped('libos worker'), worker.lost.then(() => 'lost')])) === 'lost')
        process.exit(1);
      await worker.close();
    });
}
