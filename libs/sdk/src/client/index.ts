export { AdminClient, type AdminClientOptions, type LogQuery } from './admin-client.js';
export { LibosError } from './errors.js';
export { fromEnv, type ProcessFromEnv } from './from-env.js';
export type { HttpOptions, RequestOptions } from './http.js';
export { type Answer, ProcessClient, type ProcessClientOptions } from './process-client.js';
