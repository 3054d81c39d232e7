/** What makes a launched child itself: its coordinator, its pid and its own process token. */
export interface ChildIdentity {
  url: string;
  pid: string;
  token: string;
}

/**
 * What every child inherits from its worker: the worker's environment minus every `LIBOS_*`
 * variable (a worker may hold secrets such as `LIBOS_ADMIN_TOKEN`, and its settings are not the
 * child's). Taken once at start: reading `process.env` goes through the C++ environment per
 * variable, which is a measurable part of a trivial launch.
 */
export function inheritedEnvironment(workerEnv: NodeJS.ProcessEnv): Readonly<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(workerEnv)) {
    if (value !== undefined && !name.startsWith('LIBOS_')) env[name] = value;
  }
  return env;
}

/**
 * A child's whole environment: the inherited one, then the image's `env`, then the child's
 * identity last, so an image cannot override it.
 */
export function childEnvironment(
  inherited: Readonly<Record<string, string>>,
  imageEnv: Record<string, string> | undefined,
  identity: ChildIdentity,
): Record<string, string> {
  return {
    ...inherited,
    ...imageEnv,
    LIBOS_URL: identity.url,
    LIBOS_PID: identity.pid,
    LIBOS_TOKEN: identity.token,
  };
}
