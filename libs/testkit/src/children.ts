import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';

/**
 * The servers and parts a test or benchmark starts, killed when it ends however it ends: on
 * `exit`, and on SIGTERM/SIGINT/SIGHUP (which would otherwise end Node without an `exit` event and
 * leave them running), after which the signal is raised again so the process ends as it would have.
 */
const owned = new Set<ChildProcess>();
let installed = false;

function killOwned(): void {
  for (const child of owned) child.kill('SIGKILL');
  owned.clear();
}

function install(): void {
  installed = true;
  process.once('exit', killOwned);
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killOwned();
      process.kill(process.pid, signal);
    });
  }
}

/** `spawn`, and the child is killed when this process ends (see above). */
export function spawnOwned(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, options);
  owned.add(child);
  child.once('exit', () => owned.delete(child));
  if (!installed) install();
  return child;
}

/** Resolves once `child` has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}
