export { ContractRunAbortedError, contractRun } from './contract-run.js';
export {
  type ContractRunHooks,
  type ContractRunOptions,
  contractRunOptionsSchema,
  DEFAULT_CANCEL_GRACE_MS,
  DEFAULT_DEADLINE_MS,
  EXIT_WAIT_MS,
  type LaunchControl,
  type LaunchSpec,
  type RunnerLogger,
} from './options.js';
export { RESULT_DIR_PREFIX } from './result-dir.js';
