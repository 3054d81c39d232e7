export { bwrapArgs, isInside, type Mount, type SandboxView } from './bwrap.js';
export { CgroupHost, type CgroupSupport, ChildCgroup, cgroupJoinFix } from './cgroups.js';
export { DEFAULT_LIMITS, rlimitArgs, type SandboxLimits } from './limits.js';
export { RESULT_HOME_PREFIX, ResultHomes } from './result-homes.js';
export {
  ChildSandbox,
  type ConfineRequest,
  type IsolationMode,
  type IsolationReport,
  NO_ISOLATION,
  processesOfUid,
  SANDBOX_ENV,
  Sandbox,
  type SandboxSettings,
  SYSTEM_RUNTIME,
} from './sandbox.js';
export { keyringFilter, SyscallFilter } from './seccomp.js';
export { Spawner, type SpawnerHandlers, type SpawnerRunOptions } from './spawner.js';
export { parseUidRange, UidPool, type UidRange } from './uid-pool.js';
export { monotonicMs, Watchdog, type WatchdogFiring, type WatchdogTarget } from './watchdog.js';
