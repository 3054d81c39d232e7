export {
  checkRedis,
  createRedis,
  describeRedisError,
  type RedisOverrides,
  type RedisPurpose,
} from './create.js';
export { REDACTED, redactRedisUrl } from './redact.js';
export {
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
