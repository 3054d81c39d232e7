export {
  checkRedis,
  createCluster,
  createRedis,
  createSentinel,
  createStandalone,
  describeRedisError,
  type RedisClient,
  type RedisOverrides,
  type RedisPurpose,
  wrongPrimary,
} from './create.js';
export { connectionLost, type ErrorLog } from './lost.js';
export { redisOutageLog, type WarnLog } from './outage-log.js';
export { REDACTED, redactRedisUrl } from './redact.js';
export {
  type ClusterNode,
  type ClusterRedisSettings,
  DEFAULT_REDIS_URL,
  RedisConfigError,
  type RedisEndpoint,
  type RedisEnv,
  RedisPassword,
  type RedisReplication,
  type RedisSettings,
  redisEnvSchema,
  redisSettings,
  redisSettingsFromEnv,
  type SentinelAddress,
  type SentinelRedisSettings,
  type StandaloneRedisSettings,
  sentinelSettings,
  standaloneSettings,
} from './settings.js';
