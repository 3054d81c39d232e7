import { getEventListeners, getMaxListeners, setMaxListeners } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { shareSignal } from '../src/client/abort-listener.js';
import { Http } from '../src/client/http.js';
import { parallel, Workflow } from '../src/index.js';
import { attemptOf, deferred, ScriptedRunner } from './workflow-support.js';

// One signal shared by many operations in flight is the SDK's ordinary use; Node warns of a leak
// once an AbortSignal holds more than 10 listeners, which would only be noise in a service's log.
let warnings: string[];
const onWarning = (warning: Error) => warnings.push(warning.name);
beforeEach(() => {
  warnings = [];
  process.on('warning', onWarning);
});
afterEach(() => {
  process.off('warning', onWarning);
});
/** Node emits the warning on the tick after the listener that crossed the limit. */
const warned = async () => {
  await new Promise((resolve) => setImmediate(resolve));
  return warnings.filter((name) => name === 'MaxListenersExceededWarning');
};

describe('a signal shared by many operations', () => {
  it('12 agent calls queued behind one slot under one signal: no leak warning, no listener left', async () => {
    const gate = deferred();
    const runner = new ScriptedRunner(async (_call, _signal, n) => {
      await gate.promise;
      return { type: 'Finished', value: n, attempt: attemptOf(`a${n}`) };
    });
    const wf = new Workflow({ runner, maxConcurrent: 1 });
    const controller = new AbortController();
    // The calls wait on the group's signal, which the thunks are given (the group follows `signal`).
    let group: AbortSignal | undefined;
    const running = parallel(
      Array.from({ length: 12 }, (_, i) => (signal: AbortSignal) => {
        group = signal;
        return wf.agent({ prompt: `p${i}`, kind: 'k' });
      }),
      { signal: controller.signal },
    );
    await new Promise((resolve) => setImmediate(resolve));
    gate.resolve();
    const results = await running;
    expect(results.every((r) => r.ok)).toBe(true);
    expect(await warned()).toEqual([]);
    expect(getEventListeners(group as AbortSignal, 'abort')).toHaveLength(0);
  });

  it('12 requests in flight with one signal: no leak warning, and the signal still cancels them', async () => {
    let held = 0;
    const server: Server = createServer((_request, response) => {
      held += 1;
      response.on('close', () => {
        held -= 1;
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const http = new Http({ url: `http://127.0.0.1:${port}`, token: 't' });
      const controller = new AbortController();
      const calls = Array.from({ length: 12 }, () =>
        http.request('GET', '/never-answered', z.unknown(), undefined, { signal: controller.signal }),
      );
      await expect.poll(() => held).toBe(12);
      expect(await warned()).toEqual([]);
      controller.abort(new Error('stop'));
      const settled = await Promise.allSettled(calls);
      expect(
        settled.map((s) => (s.status === 'rejected' ? (s.reason as Error).message : 'answered')),
      ).toEqual(Array(12).fill('stop'));
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a limit the caller set is left as it is', () => {
    const own = new AbortController();
    setMaxListeners(50, own.signal);
    shareSignal(own.signal);
    expect(getMaxListeners(own.signal)).toBe(50);
  });
});
