export { exited, spawnOwned } from './children.js';
export { uniquePrefix } from './names.js';
export { hostPid, LAST_JOB_PID, SELF_PID } from './processes.js';
export { freePort, type StartRedisOptions, startRedis, type TestRedis } from './redis.js';
export { type StartRedisClusterOptions, startRedisCluster, type TestRedisCluster } from './redis-cluster.js';
export { ReplyCutter } from './reply-cutter.js';
export { type SentinelGroup, type StartSentinelOptions, startSentinelGroup } from './sentinel.js';
