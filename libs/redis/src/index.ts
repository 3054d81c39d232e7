export {
  checkRedis,
  createRedis,
  createSentinel,
  createStandalone,
  describeRedisError,
  type RedisOverrides,
  type RedisPurpose,
  wrongPrimary,
} from './create.js';
export { REDACTED, redactRedisUrl } from './redact.js';
export {
  DEFAULT_REDIS_URL,
  RedisConfigError,
  type RedisEndpoint,
  type RedisEnv,
  type RedisReplication,
  RedisPassword,
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
