export { uniquePrefix } from './names.js';
export { freePort, type StartRedisOptions, startRedis, type TestRedis } from './redis.js';
