import { mkdirSync, writeFileSync } from 'node:fs';
import type { Reporter, SerializedError, TestModule, TestRunEndReason } from 'vitest/node';

// Vitest's JSON report counts tests only: an error thrown outside a test (an unhandled rejection,
// a timer firing after its test ended) fails the run without a failed test in it. This reporter
// writes those errors to reports/unhandled.json so tools/test-summary.mjs can name them at the
// end of a CI log.
export default class UnhandledErrorsReporter implements Reporter {
  onTestRunEnd(
    _modules: ReadonlyArray<TestModule>,
    errors: ReadonlyArray<SerializedError>,
    reason: TestRunEndReason,
  ): void {
    mkdirSync('reports', { recursive: true });
    const described = errors.map((e) => ({
      name: e.name,
      message: e.message,
      stack: e.stack?.split('\n').slice(0, 8).join('\n'),
    }));
    writeFileSync('reports/unhandled.json', JSON.stringify({ reason, errors: described }, null, 2));
  }
}
