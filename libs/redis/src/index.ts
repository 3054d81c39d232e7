export {
  checkRedis,
  createCluster,
  createRedis,
  createStandalone,
  describeRedisError,
  type RedisClient,
  type RedisOverrides,
  type RedisPurpose,
} from './create.js';
export { REDACTED, redactRedisUrl } from './redact.js';
export {
  type ClusterNode,
  type ClusterRedisSettings,
  DEFAULT_REDIS_URL,
  RedisConfigError,
  type RedisEndpoint,
  type RedisEnv,
  RedisPassword,
  type RedisSettings,
  redisEnvSchema,
  redisSettings,
  redisSettingsFromEnv,
  type StandaloneRedisSettings,
} from './settings.js';
