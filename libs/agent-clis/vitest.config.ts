import { libosVitestConfig } from '../../vitest.shared.ts';

// Each test runs a real agent CLI (a few seconds each on a loaded machine).
export default libosVitestConfig({ testTimeout: 60_000 });
