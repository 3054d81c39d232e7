// The spawner: one per worker, a small process of its own that runs every launch of its worker
// (the runner, the sandbox, the watchdog), so the worker never forks itself. Forking a process
// copies its page tables and the parent waits for the child's exec: for a worker of ~150 MB that
// blocked its event loop ~5-8 ms a launch; this process is a third of that size and blocking it
// delays nobody's Redis traffic. Started by `Spawner` (spawner.ts) with the sandbox settings as
// argv[2]; speaks `spawner-protocol.ts` on stdin/stdout. stdin's EOF (the worker died or closed)
// kills every launch and ends it.
import { tmpdir } from 'node:os';
import { classifyLaunch, namesResultFile } from '@libos/contract';
import {
  ContractRunAbortedError,
  type ContractRunOptions,
  contractRun,
  type LaunchControl,
} from '@libos/runner';
import { closeInheritedFds } from './inherited-fds.js';
import { ResultHomes } from './result-homes.js';
import { Sandbox, type SandboxSettings } from './sandbox.js';
import { lineReader, type RunRequest, type SpawnerEvent, type SpawnerRequest } from './spawner-protocol.js';
import { monotonicMs, Watchdog } from './watchdog.js';

/** Events of one turn of the event loop, written together (see `send`). */
let queued: string[] = [];

/**
 * Queues an event line for the worker; the lines of one turn of the loop go in one write (a
 * pipe write that wakes the worker costs more than the line: a quarter of a busy spawner's time).
 * `now`: written at once, for a line that must be out before this process exits.
 */
function send(event: SpawnerEvent, now = false): void {
  queued.push(`${JSON.stringify(event)}\n`);
  if (now) flush();
  else if (queued.length === 1) setImmediate(flush);
}

function flush(): void {
  if (queued.length === 0) return;
  const lines = queued.join('');
  queued = [];
  process.stdout.write(lines);
}

interface Run {
  abort: AbortController;
  control: LaunchControl | undefined;
}

// Before anything is launched: what this process inherited without close-on-exec would reach
// every child. (Node marks the first ones close-on-exec at start, up to the first gap above 15,
// fd 3, the worker's pipe of beats, among them; one further up, as a shell's `exec 100<file`
// makes, it does not.)
closeInheritedFds();

const runs = new Map<number, Run>();
const homes = new ResultHomes();
const settings = JSON.parse(process.argv[2] ?? '{}') as SandboxSettings;
let sandbox: Sandbox;
try {
  sandbox = Sandbox.create(settings);
} catch (error) {
  send({ ev: 'fatal', message: error instanceof Error ? error.message : String(error) }, true);
  process.exit(1);
}
// fd 3 is the worker's pipe of beats, handed on to the watchdog (see Spawner).
const watchdog = new Watchdog(
  (fired) => send({ ev: 'fired', fence: fired.id, lateMs: fired.lateMs, killed: fired.killed }),
  (reason) => send({ ev: 'watchdog', reason }),
  3,
);

/** Fence ids armed now; and the latest beat of each not armed yet (its `run` is still queued). */
const armed = new Set<string>();
const early = new Map<string, number>();
/** Bounds `early`: beats of launches that never came (a budget spent before the spawn). */
const EARLY_MAX = 10_000;
const TOO_LATE = "the lease's fence passed before the child could start (the worker is behind)";

function beat(fence: string, deadline: number): void {
  if (armed.has(fence)) {
    watchdog.beat(fence, deadline);
    return;
  }
  if (early.size >= EARLY_MAX) early.clear();
  early.set(fence, Math.max(deadline, early.get(fence) ?? 0));
}

function run(request: RunRequest): void {
  const { id, fence } = request;
  const entry: Run = { abort: new AbortController(), control: undefined };
  runs.set(id, entry);
  // The watchdog forgets the launch before its uid can go to another one (it kills by uid).
  const disarm = () => {
    if (!fence) return;
    armed.delete(fence.id);
    watchdog.disarm(fence.id);
  };
  let confinement: ReturnType<Sandbox['confine']> | undefined;
  // Renewals that came while this request waited here count: the latest deadline wins.
  const deadline = fence ? Math.max(fence.deadline, early.get(fence.id) ?? 0) : undefined;
  if (fence) early.delete(fence.id);
  const launch = (async () => {
    // A fence already passed: the lease is not vouched for, so nothing may start.
    if (deadline !== undefined && monotonicMs() >= deadline) {
      return classifyLaunch({ launched: false, failure: TOO_LATE });
    }
    confinement = request.confine ? sandbox.confine(request.confine, disarm) : undefined;
    // Armed before the spawn, with the uid: from here on the child dies unless beats come. (An
    // unconfined one, with nothing the watchdog could kill yet, is sent with its group at the spawn.)
    if (fence && deadline !== undefined) {
      armed.add(fence.id);
      watchdog.arm(fence.id, deadline, { uid: confinement?.uid });
    }
    // `stdout`: the runner's tap of the child's stdout (a copy for logs), where the runner has one.
    const options: ContractRunOptions & { stdout?: (chunk: Uint8Array) => void } = {
      ...request.launch,
      input: request.launch.input,
      // In this spawner's home in the parent asked for (else the caller's temp dir): see
      // ResultHomes. Without one (none can be made there), as asked: the runner falls back or fails.
      resultParent: resultHome(request) ?? request.launch.resultParent,
      signal: entry.abort.signal,
      stderr:
        request.stderr === 'tap'
          ? (chunk) => send({ ev: 'stderr', id, data: Buffer.from(chunk).toString('base64') })
          : request.stderr,
      ...(request.stdout
        ? {
            stdout: (chunk: Uint8Array) =>
              send({ ev: 'stdout', id, data: Buffer.from(chunk).toString('base64') }),
          }
        : {}),
      onSpawn: (control) => {
        entry.control = control;
        if (fence) watchdog.target(fence.id, control.pid);
        send({
          ev: 'spawned',
          id,
          pid: control.pid,
          ...(confinement?.uid === undefined ? {} : { uid: confinement.uid }),
        });
      },
      ...(request.log
        ? { logger: { debug: (fields, message) => send({ ev: 'log', id, fields, message }) } }
        : {}),
      ...(confinement ? { confinement } : {}),
    };
    if (request.tmpdir === undefined) return contractRun(options);
    // The directory is made from os.tmpdir() synchronously in the call, so this is exact.
    const own = process.env.TMPDIR;
    process.env.TMPDIR = request.tmpdir;
    try {
      return contractRun(options);
    } finally {
      if (own === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = own;
    }
  })();
  launch
    .then(
      (result) => send({ ev: 'done', id, result }),
      async (error: unknown) => {
        await confinement?.release();
        if (error instanceof ContractRunAbortedError) send({ ev: 'aborted', id });
        else {
          const message = error instanceof Error ? error.message : String(error);
          send({ ev: 'error', id, message, type: error instanceof TypeError ? 'TypeError' : 'Error' });
        }
      },
    )
    .finally(() => {
      disarm();
      runs.delete(id);
    });
}

/**
 * This spawner's home for the launch's result directory; none for a launch the runner refuses for
 * its argv (it makes nothing), nor where no home can be made.
 */
function resultHome(request: RunRequest): string | undefined {
  if (!namesResultFile(request.launch.args)) return undefined;
  return homes.homeIn(request.launch.resultParent ?? request.tmpdir ?? tmpdir());
}

function handle(line: string): void {
  let request: SpawnerRequest;
  try {
    request = JSON.parse(line) as SpawnerRequest;
  } catch {
    return;
  }
  if (request.op === 'run') run(request);
  else if (request.op === 'beat') beat(request.fence, request.deadline);
  else control(request);
}

function control(request: Exclude<SpawnerRequest, { op: 'run' | 'beat' }>): void {
  const entry = runs.get(request.id);
  if (!entry) return;
  if (request.op === 'abort') entry.abort.abort();
  else if (request.op === 'signal') entry.control?.signal(request.signal);
  else entry.control?.[request.op]();
}

let ending = false;
async function workerGone(): Promise<void> {
  if (ending) return;
  ending = true;
  // The worker is gone: nothing it launched may outlive it.
  for (const entry of runs.values()) entry.control?.signal('SIGKILL');
  await watchdog.close();
  sandbox.close();
  process.exit(0); // the runner's exit cleanup kills what is left and removes the directories
}

// Its life is its worker's: it ends when the worker's end of stdin closes (above), never on a
// termination signal. A service manager stopping the worker's whole group (systemd's default)
// signals this process too: dying then, it would skip its ending (above) and leave the result
// directories of the launches in flight behind, while the worker goes on reporting them.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => undefined);
process.stdin.setEncoding('utf8');
process.stdin.on('data', lineReader(handle));
process.stdin.on('end', workerGone);
// EPIPE on a write: the worker died before its end of stdin was seen closed. Same ending, not a crash.
process.stdout.on('error', workerGone);
send({ ev: 'ready', report: sandbox.report, describe: sandbox.describe(), tmpdir: tmpdir() });
