export { ContractRunAbortedError, contractRun } from './contract-run.js';
// The PATH search exec does, for a launcher that checks a program before it runs it elsewhere.
export { findExecutable, isExecutableFile } from './executable.js';
export {
  type ConfinedSpawn,
  type Confinement,
  type ContractRunHooks,
  type ContractRunOptions,
  contractRunOptionsSchema,
  DEFAULT_CANCEL_GRACE_MS,
  DEFAULT_DEADLINE_MS,
  DEFAULT_MAX_RESULT_BYTES,
  EXIT_WAIT_MS,
  type LaunchControl,
  type LaunchSpec,
  type RunnerLogger,
} from './options.js';
// The launcher itself, for benchmarks that compare a bare loop of it with a whole cluster.
export { type Launched, PosixSpawnError, posixSpawn, posixSpawnAvailable } from './posix-spawn.js';
export { memoryBacked, RESULT_DIR_PREFIX } from './result-dir.js';
