import { defineConfig, mergeConfig } from 'vitest/config';
import { libosVitestConfig } from '../vitest.shared.ts';

// End-to-end suites start whole clusters of OS processes: one file at a time on 2 cores.
export default mergeConfig(
  libosVitestConfig({ testTimeout: 120_000, fileParallelism: false }),
  defineConfig({ test: { include: ['e2e/**/*.test.ts'], hookTimeout: 60_000 } }),
);
