export { type ChildIdentity, childEnvironment, inheritedEnvironment } from './child-env.js';
export { loadWorkerConfig, type WorkerConfig, workerEnvSchema } from './config.js';
export { type LaunchPlan, type Plan, planLaunch } from './launch-plan.js';
export type { AttemptSummary } from './run-attempt.js';
export { type RunningWorker, type StartWorkerOptions, startWorker } from './worker.js';
