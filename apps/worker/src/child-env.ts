/** What makes a launched child itself: its coordinator, its pid and its own process token. */
export interface ChildIdentity {
  url: string;
  pid: string;
  token: string;
}

/**
 * A child's whole environment: the worker's own minus every `LIBOS_*` variable (a worker may hold
 * secrets such as `LIBOS_ADMIN_TOKEN`, and its settings are not the child's), then the image's
 * `env`, then the child's identity last, so an image cannot override it.
 */
export function childEnvironment(
  workerEnv: NodeJS.ProcessEnv,
  imageEnv: Record<string, string> | undefined,
  identity: ChildIdentity,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(workerEnv)) {
    if (value !== undefined && !name.startsWith('LIBOS_')) env[name] = value;
  }
  Object.assign(env, imageEnv);
  env.LIBOS_URL = identity.url;
  env.LIBOS_PID = identity.pid;
  env.LIBOS_TOKEN = identity.token;
  return env;
}
