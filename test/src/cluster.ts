import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AdminClient, ProcessClient } from '@libos/sdk';
import {
  exited,
  freePort,
  type SentinelGroup,
  type StartSentinelOptions,
  spawnOwned,
  startRedis,
  startRedisCluster,
  startSentinelGroup,
  type TestRedis,
} from '@libos/testkit';
import { Redis, Cluster as RedisCluster } from 'ioredis';
import { describeProcess, isSourceTooling, killAll, processesMarked } from './os-processes.js';
import { eventually, sleep } from './poll.js';
import { WORKSPACE } from './scratch.js';

const repo = (relative: string) => fileURLToPath(new URL(`../../${relative}`, import.meta.url));
export const CLI_SOURCE = repo('apps/cli/src/main.ts');
export const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
/** Set on the cluster's coordinator and workers; workers pass it on to every child they launch. */
export const CLUSTER_MARKER = 'E2E_CLUSTER';
/** Set on each worker (`e2e-<index>`) and so seen by its children: which worker ran me. */
export const WORKER_NAME_VAR = 'E2E_WORKER';

/**
 * How the parts run: from source through tsx (the default: no build needed), or built with plain
 * node when E2E_FROM_DIST=1 (what a deployment runs; benchmarks use it); `bin`: the CLI's bin,
 * the entry `npx libos` runs (built too).
 */
function cliEntry(bin = false): string[] {
  if (bin) return [repo('apps/cli/bin/libos.js')];
  if (process.env.E2E_FROM_DIST === '1') return [repo('apps/cli/dist/main.js')];
  return ['--import', 'tsx', '--conditions=@libos/source', CLI_SOURCE];
}

/** What a part wrote to its stdout and stderr together: the first 1 MiB, and how much in all. */
export interface CapturedOutput {
  text: string;
  bytes: number;
}

const CAPTURE_KEEP = 1 << 20;

/** How `spawnCli` starts a part and where its output goes. */
interface PartLaunch {
  /** Through the CLI's bin (`fleet`), else `cliEntry()`'s default. */
  bin?: boolean;
  /** LIBOS_LOG_LEVEL for the part; `null`: none given (the part's own default). */
  logLevel?: string | null;
  /** Keep its stdout and stderr here. */
  capture?: CapturedOutput | undefined;
  /** Append its stdout and stderr to this file (as a log collector would take them). */
  logFile?: string | undefined;
}

/** `libos <args>` as its own OS process; with `capture`, its stdout and stderr are kept there. */
function spawnCli(
  args: string[],
  env: Record<string, string>,
  name: string,
  launch: PartLaunch = {},
): ChildProcess {
  const { capture, logFile } = launch;
  const logLevel = launch.logLevel === undefined ? (process.env.E2E_LOG_LEVEL ?? 'warn') : launch.logLevel;
  const inherited: Record<string, string | undefined> = { ...process.env };
  if (logLevel === null) delete inherited.LIBOS_LOG_LEVEL;
  else inherited.LIBOS_LOG_LEVEL = logLevel;
  const fd = logFile === undefined ? undefined : openSync(logFile, 'a', 0o600);
  const out = fd ?? (capture ? 'pipe' : 'inherit');
  const child = spawnOwned(
    process.execPath,
    [...(process.env.E2E_NODE_ARGS?.split(' ').filter(Boolean) ?? []), ...cliEntry(launch.bin), ...args],
    { cwd: repo('.'), env: { ...inherited, ...env }, stdio: ['ignore', out, out] },
  );
  if (fd !== undefined) closeSync(fd); // the part holds its own copy
  child.once('error', (error) => process.stderr.write(`${name}: ${error.message}\n`));
  if (capture) {
    const keep = (chunk: Buffer) => {
      capture.bytes += chunk.length;
      if (capture.text.length < CAPTURE_KEEP) capture.text += chunk.toString('utf8');
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
  }
  return child;
}

async function stop(
  child: ChildProcess,
  signal: NodeJS.Signals = 'SIGTERM',
  graceMs = 15_000,
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  child.kill(signal);
  await exited(child);
  clearTimeout(timer);
}

export interface ClusterOptions {
  /** Redis's AOF fsync policy: `always` (tests: a crash loses nothing acknowledged) or `everysec` (deploy/redis.conf). */
  fsync?: 'always' | 'everysec';
  workers?: number;
  concurrency?: number;
  /** Redis over its unix socket (as `libos up` runs it) instead of loopback TCP. */
  unixSocket?: boolean;
  /**
   * Redis requires this password (as `libos up` runs it); the parts read it from a 0600 file in
   * Redis's private dir (LIBOS_REDIS_PASSWORD_FILE), so it is in no part's environment.
   */
  redisPassword?: string;
  /** Extra env for the coordinator (e.g. LIBOS_LONG_POLL_MS). */
  coordinatorEnv?: Record<string, string>;
  /** Extra env for every worker (e.g. LIBOS_LEASE_MS, LIBOS_POOLS). */
  workerEnv?: Record<string, string>;
  /** Keep what each worker writes to its stdout and stderr (`workerOutput(i)`) instead of passing it on. */
  captureWorkerOutput?: boolean;
  /**
   * The parts as README.md's "Running a fleet" starts them: through the CLI's bin (what `npx
   * libos` runs; needs the build), no LIBOS_LOG_LEVEL (each part's default), the admin token from
   * a 0600 file (LIBOS_ADMIN_TOKEN_FILE), workers given LIBOS_PUBLIC_URL and `--pools default`,
   * and the parts' own lease, shutdown grace and reaper interval rather than the tests' short ones.
   */
  fleet?: boolean;
  /** Each part's stdout and stderr go to `<logDir>/<part>.log` instead of this process's. */
  logDir?: string;
  /**
   * Redis as a Sentinel group (a primary, replicas, sentinels on loopback) instead of one server:
   * every part is given LIBOS_REDIS_SENTINELS and LIBOS_REDIS_SENTINEL_MASTER (`cluster.sentinel`).
   */
  sentinel?: StartSentinelOptions;
  /**
   * Run the parts on a real Redis Cluster of this many masters on loopback
   * (LIBOS_REDIS_CLUSTER_NODES) instead of one redis-server. Default: 3 when E2E_REDIS=cluster,
   * else none. No AOF, unix socket or restart/crash on a cluster.
   */
  redisMasters?: number;
}

/** E2E_REDIS=cluster: every e2e cluster runs on a 3-master Redis Cluster unless a test says otherwise. */
export function defaultRedisMasters(): number | undefined {
  return process.env.E2E_REDIS === 'cluster' ? 3 : undefined;
}

/**
 * A Redis Cluster of `masters` for one e2e cluster, as a TestRedis: `url` and `clusterNodes` are
 * the seed list; with a password, a 0600 file in a private dir holds it (LIBOS_REDIS_PASSWORD_FILE).
 */
async function startClusterRedis(
  masters: number,
  password: string | undefined,
): Promise<TestRedis & { clusterNodes: string; pids: readonly number[] }> {
  const cluster = await startRedisCluster({ masters, ...(password === undefined ? {} : { password }) });
  const dir = password === undefined ? undefined : mkdtempSync(join(tmpdir(), 'libos-e2e-redis-'));
  return {
    url: cluster.nodes,
    clusterNodes: cluster.nodes,
    pids: cluster.pids,
    source: 'redis-server',
    ...(password === undefined ? {} : { password }),
    ...(dir === undefined ? {} : { dir }),
    async stop() {
      await cluster.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A real cluster: redis-server (AOF), one coordinator and N workers, each its own OS process. */
export class Cluster {
  readonly workers: (ChildProcess | undefined)[] = [];
  coordinator: ChildProcess | undefined;
  readonly admin: AdminClient;
  /** With `captureWorkerOutput`: what worker `i` wrote to its stdout and stderr. */
  readonly workerOutput: CapturedOutput[] = [];
  /** This cluster's value of `E2E_CLUSTER`, which every process it starts inherits. */
  readonly marker = randomBytes(6).toString('hex');
  private readonly probe: Redis | RedisCluster;
  /** With `fleet`: a private dir holding the admin token's 0600 file. */
  private secrets: string | undefined;

  private constructor(
    /** On a Redis Cluster: `url` is the seed list (LIBOS_REDIS_CLUSTER_NODES), `clusterNodes` set. */
    readonly redis: TestRedis & { clusterNodes?: string; pids?: readonly number[] },
    readonly url: string,
    private readonly port: number,
    private readonly options: ClusterOptions,
  ) {
    this.admin = new AdminClient({ url, adminToken: ADMIN_TOKEN });
    const auth = redis.password === undefined ? {} : { password: redis.password };
    this.probe = redis.clusterNodes
      ? new RedisCluster(
          redis.clusterNodes
            .split(',')
            .map((node) => ({ host: '127.0.0.1', port: Number(node.split(':')[1]) })),
          { lazyConnect: true, redisOptions: { maxRetriesPerRequest: 1, ...auth } },
        )
      : new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1, ...auth });
    this.probe.on('error', () => {}); // Redis crashes on purpose in fault tests; calls still reject
  }

  /** A client of this cluster's Redis (one server's, or the Redis Cluster's), not yet connected. */
  redisClient(): Redis | RedisCluster {
    const auth = this.redis.password === undefined ? {} : { password: this.redis.password };
    return this.redis.clusterNodes
      ? this.probe.duplicate()
      : new Redis(this.redis.url, { lazyConnect: true, ...auth });
  }

  /**
   * Starts Redis, the coordinator (healthy) and the workers (each listening on its queues), each
   * given 25 s, so a slow start fails inside the suite's 60 s hook timeout and is cleaned up.
   */
  static async start(options: ClusterOptions = {}): Promise<Cluster> {
    const masters = options.redisMasters ?? defaultRedisMasters();
    const redis = options.sentinel
      ? await startSentinelGroup(options.sentinel)
      : masters
        ? await startClusterRedis(masters, options.redisPassword)
        : await startRedis({
            own: true,
            aof: true,
            fsync: options.fsync ?? 'always',
            unixSocket: options.unixSocket ?? false,
            ...(options.redisPassword === undefined ? {} : { password: options.redisPassword }),
          });
    if (options.redisPassword !== undefined && redis.dir) {
      writeFileSync(join(redis.dir, 'password'), options.redisPassword, { mode: 0o600 });
    }
    const port = await freePort();
    const cluster = new Cluster(redis, `http://127.0.0.1:${port}`, port, options);
    if (options.fleet) {
      cluster.secrets = mkdtempSync(join(tmpdir(), 'libos-e2e-secrets-'));
      writeFileSync(join(cluster.secrets, 'admin-token'), ADMIN_TOKEN, { mode: 0o600 });
    }
    try {
      await cluster.startCoordinator();
      await Promise.all(Array.from({ length: options.workers ?? 2 }, (_, i) => cluster.startWorker(i)));
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** With the `sentinel` option: the group (its primary can be killed and revived). */
  get sentinel(): SentinelGroup | undefined {
    return this.options.sentinel ? (this.redis as SentinelGroup) : undefined;
  }

  private get baseEnv(): Record<string, string> {
    const password: Record<string, string> =
      this.options.redisPassword !== undefined && this.redis.dir
        ? { LIBOS_REDIS_PASSWORD_FILE: join(this.redis.dir, 'password') }
        : {};
    const where = this.sentinel
      ? this.sentinel.env
      : this.redis.clusterNodes
        ? { LIBOS_REDIS_CLUSTER_NODES: this.redis.clusterNodes }
        : { LIBOS_REDIS_URL: this.redis.url };
    return {
      ...where,
      // A fleet's workers are told the coordinators' address as LIBOS_PUBLIC_URL (startWorker).
      ...(this.options.fleet ? {} : { LIBOS_URL: this.url }),
      [CLUSTER_MARKER]: this.marker,
      ...password,
    };
  }

  /** How a part is launched and where its output goes (`fleet`, `logDir`). */
  private launch(part: string, capture?: CapturedOutput): PartLaunch {
    const { fleet, logDir } = this.options;
    return {
      ...(fleet ? { bin: true, logLevel: null } : {}),
      capture,
      logFile: logDir === undefined ? undefined : join(logDir, `${part}.log`),
    };
  }

  async startCoordinator(): Promise<void> {
    const fleet = this.options.fleet === true;
    const coordinator = spawnCli(
      ['coordinator'],
      {
        ...this.baseEnv,
        ...(fleet
          ? { LIBOS_ADMIN_TOKEN_FILE: join(this.secrets!, 'admin-token') }
          : { LIBOS_ADMIN_TOKEN: ADMIN_TOKEN, LIBOS_REAPER_INTERVAL_MS: '500' }),
        LIBOS_PORT: String(this.port),
        ...this.options.coordinatorEnv,
      },
      'coordinator',
      this.launch('coordinator'),
    );
    this.coordinator = coordinator;
    await eventually(
      async () => {
        if (coordinator.exitCode !== null) throw new Error(`coordinator exited ${coordinator.exitCode}`);
        return (await fetch(`${this.url}/healthz`)).ok ? true : undefined;
      },
      { withinMs: 25_000, everyMs: 100, what: 'the coordinator to be healthy' },
    );
  }

  async stopCoordinator(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (this.coordinator) await stop(this.coordinator, signal);
  }

  /** Stops the coordinator with `signal` (SIGKILL: a crash) and starts it again on the same port. */
  async restartCoordinator(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await this.stopCoordinator(signal);
    await this.startCoordinator();
  }

  workerName(index: number): string {
    return `e2e-${index}`;
  }

  /** Starts worker `index` and resolves once its BullMQ consumers are connected to Redis. */
  async startWorker(index: number, env: Record<string, string> = {}): Promise<ChildProcess> {
    const name = this.workerName(index);
    const fleet = this.options.fleet === true;
    // The id only names the worker (found by it in CLIENT LIST below); it changes no behaviour.
    const args = ['worker', '--id', name, ...(fleet ? ['--pools', 'default'] : [])];
    const capture = this.options.captureWorkerOutput ? { text: '', bytes: 0 } : undefined;
    if (capture) this.workerOutput[index] = capture;
    if (this.options.concurrency) args.push('--concurrency', String(this.options.concurrency));
    const worker = spawnCli(
      args,
      {
        ...this.baseEnv,
        ...(fleet
          ? { LIBOS_PUBLIC_URL: this.url }
          : {
              // Short, so crash tests finish soon; not shorter: on a loaded 2-core CI host a worker
              // launching dozens of sandboxed children at once has stalled past a 3 s lease's fence,
              // and its watchdog then (rightly) killed children the test expected to finish.
              LIBOS_LEASE_MS: '5000',
              // A stop cancels children still running after 2 s rather than 30 (only a failed test leaves any).
              LIBOS_SHUTDOWN_GRACE_MS: '2000',
            }),
        // The images' programs live in the repository; every sandbox shows it read-only.
        LIBOS_SANDBOX_RUNTIME: repo('.'),
        [WORKER_NAME_VAR]: name,
        ...this.options.workerEnv,
        ...env,
      },
      `worker ${index}`,
      this.launch(`worker-${index}`, capture),
    );
    this.workers[index] = worker;
    await eventually(
      async () => {
        if (worker.exitCode !== null) throw new Error(`worker ${index} exited ${worker.exitCode}`);
        return (await this.workerConnected(name)) ? true : undefined;
      },
      { withinMs: 25_000, everyMs: 100, what: `worker ${index} to take launches` },
    );
    return worker;
  }

  /**
   * BullMQ names a worker's queue connection `…:w:<worker name>`: listed means consuming (on a
   * Redis Cluster, by the master holding the queues' slot: every master is asked).
   */
  private async workerConnected(name: string): Promise<boolean> {
    if (this.probe.status === 'wait') await this.probe.connect();
    const nodes = this.probe instanceof RedisCluster ? this.probe.nodes('master') : [this.probe];
    for (const node of nodes) {
      const clients = String(await node.call('CLIENT', 'LIST'));
      if (clients.split('\n').some((line) => / name=\S*:w:(\S+)/.exec(line)?.[1] === name)) return true;
    }
    return false;
  }

  async stopWorker(index: number, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const worker = this.workers[index];
    if (worker) await stop(worker, signal);
  }

  /** SIGKILL: the worker dies mid-run, its children are orphaned (as on a real host). */
  killWorker(index: number): Promise<void> {
    return this.stopWorker(index, 'SIGKILL');
  }

  /** A caller-driven root and a client acting as it. */
  async root(goal = 'e2e root', extra: Parameters<AdminClient['createProcess']>[0] = { goal }) {
    // Its children see the workspace (and the scratch dirs in it) read-write in their sandboxes.
    const created = await this.admin.createProcess({ cwd: WORKSPACE, ...extra, goal });
    return {
      pid: created.pid,
      token: created.token!,
      client: new ProcessClient({ url: this.url, token: created.token! }),
    };
  }

  /**
   * OS processes this cluster started (children, grandchildren) other than its coordinator and
   * workers, described as `<pid> <state> <command line>`.
   */
  strays(): string[] {
    const own = new Set([this.coordinator, ...this.workers].map((p) => p?.pid));
    return processesMarked(CLUSTER_MARKER, this.marker)
      .filter((pid) => !own.has(pid) && !isSourceTooling(pid))
      .map(describeProcess);
  }

  /** The strays still there after up to `withinMs` (a killed process takes a moment to go). */
  async straysAfter(withinMs = 2_000): Promise<string[]> {
    const until = Date.now() + withinMs;
    for (;;) {
      const strays = this.strays();
      if (strays.length === 0 || Date.now() > until) return strays;
      await sleep(50);
    }
  }

  /** Stops everything; processes left behind (e.g. children of a killed worker) are killed and returned. */
  async stop(): Promise<string[]> {
    await Promise.all(this.workers.map((w) => (w ? stop(w) : undefined)));
    if (this.coordinator) await stop(this.coordinator);
    const left = processesMarked(CLUSTER_MARKER, this.marker);
    const strays = left.filter((pid) => !isSourceTooling(pid)).map(describeProcess);
    killAll(left);
    this.probe.disconnect();
    await this.redis.stop();
    if (this.secrets) rmSync(this.secrets, { recursive: true, force: true });
    return strays;
  }
}
