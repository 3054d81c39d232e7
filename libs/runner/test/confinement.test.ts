// The runner's use of a `Confinement` (implemented by @libos/sandbox): an object in this process,
// so these are not among the conformance tests the sandbox also runs through its spawner.
import { describe, expect, it } from 'vitest';
import { type Confinement, contractRun } from '../src/index.js';
import { result, sh, writeResult } from './helpers.js';

const base = { input: { query: 'q' }, kind: 'probe', id: 'test-1' };

describe('contractRun with a confinement', () => {
  it("reports the result without waiting for a confinement's release, which it still calls", async () => {
    const doc = result('test-1', 'completed', { output: 'done' });
    const calls: string[] = [];
    let releaseDone: () => void = () => undefined;
    // A confinement that runs the child as it is and whose release (the sandbox emptying) never
    // ends on its own: the result must come anyway.
    const confinement: Confinement = {
      spawn: async (child) => ({ command: child.command, args: child.args, handshake: false }),
      started: async () => undefined,
      signal: (signal) => void calls.push(signal),
      release: () => {
        calls.push('release');
        return new Promise<void>((resolve) => {
          releaseDone = resolve;
        });
      },
    };
    const classified = await contractRun({
      ...sh(`read request; ${writeResult(doc)}`),
      ...base,
      deadlineMs: 5_000,
      confinement,
    });
    expect(classified.terminal).toEqual({ type: 'captured' });
    expect(calls.at(-1)).toBe('release');
    releaseDone();
  });
});
