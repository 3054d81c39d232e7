import { Redis } from 'ioredis';

/**
 * A client of one loopback server that connects once and never retries; its error events are
 * swallowed (the caller gets the error from `connect` or the command). Disconnect it after use.
 */
export function oneShotClient(port: number, password?: string): Redis {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    ...(password === undefined ? {} : { password }),
  });
  client.on('error', () => {});
  return client;
}

/** Sends one command to the server on `port` and returns its reply as it came. */
export async function askOnce(
  port: number,
  password: string | undefined,
  ...command: string[]
): Promise<unknown> {
  const client = oneShotClient(port, password);
  try {
    await client.connect();
    return await client.call(command[0] as string, ...command.slice(1));
  } finally {
    client.disconnect();
  }
}
