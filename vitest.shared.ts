import { defineConfig } from 'vitest/config';
import UnhandledErrorsReporter from './tools/vitest-unhandled-reporter.ts';

// Workspace packages resolve to their TypeScript sources in tests (no build needed), via the
// `@libos/source` export condition that tsconfig's customConditions also uses.
const conditions = ['@libos/source', 'import', 'module', 'node', 'default'];

export function libosVitestConfig(options: { testTimeout?: number; fileParallelism?: boolean } = {}) {
  return defineConfig({
    resolve: { conditions },
    ssr: { resolve: { conditions, externalConditions: ['@libos/source'] } },
    test: {
      include: ['test/**/*.test.ts'],
      environment: 'node',
      testTimeout: options.testTimeout ?? 20_000,
      hookTimeout: 30_000,
      fileParallelism: options.fileParallelism ?? true,
      passWithNoTests: true,
      reporters: ['default', 'json', new UnhandledErrorsReporter()],
      outputFile: { json: 'reports/vitest.json' },
    },
  });
}
