// The runner's own conformance tests (libs/runner/test), run through a spawner: every launch of
// them goes over the pipe to a spawner process (isolation none, as those tests expect the child to
// run as this user) and its `contractRun`, with the control, abort, stderr and logger relayed back.
// What differs is stated where a test is skipped: the spawner's TMPDIR is fixed when it starts.
import { afterAll, vi } from 'vitest';
import type { Spawner as SpawnerType } from '../src/spawner.js';

let spawner: Promise<SpawnerType> | undefined;
vi.mock('../../runner/src/index.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../runner/src/index.js')>();
  return {
    ...original,
    contractRun: async (options: Parameters<typeof original.contractRun>[0]) => {
      // Imported here, not in the factory: the spawner imports the module this mock replaces.
      const { Spawner } = await import('../src/spawner.js');
      spawner ??= Spawner.start(
        {
          mode: 'none',
          uids: { first: 31_100, last: 31_199 },
          lockDir: '/tmp/spawner-conformance-locks',
          runtime: [],
          hide: [],
          cgroupName: 'libos-spawner-test',
          bwrap: 'bwrap',
          prlimit: '/usr/bin/prlimit',
        },
        process.env,
      );
      return (await spawner).run(options);
    },
  };
});
afterAll(async () => {
  await (await spawner)?.close();
});

await import('../../runner/test/outcomes.test.ts');
await import('../../runner/test/deadline.test.ts');
await import('../../runner/test/teardown.test.ts');
