import { pidSchema } from '@libos/protocol';
import { z } from 'zod';
import { ProcessClient, type ProcessClientOptions } from './process-client.js';

const childEnvSchema = z.object({
  LIBOS_URL: z.url(),
  LIBOS_PID: pidSchema,
  LIBOS_TOKEN: z.string().min(1),
});

/** A client acting as the process named by the environment a worker gives a launched child. */
export interface ProcessFromEnv extends ProcessClient {
  readonly pid: string;
}

export function fromEnv(
  env: NodeJS.ProcessEnv = process.env,
  options: Omit<ProcessClientOptions, 'url' | 'token'> = {},
): ProcessFromEnv {
  const parsed = childEnvSchema.safeParse(env);
  if (!parsed.success) {
    const names = [...new Set(parsed.error.issues.map((issue) => String(issue.path[0])))].join(', ');
    throw new Error(
      `fromEnv: ${names} missing or invalid; a libos worker sets LIBOS_URL, LIBOS_PID and LIBOS_TOKEN`,
    );
  }
  const client = new ProcessClient({
    ...options,
    url: parsed.data.LIBOS_URL,
    token: parsed.data.LIBOS_TOKEN,
  });
  return Object.assign(client, { pid: parsed.data.LIBOS_PID });
}
