import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints the run's totals as one plain line after the default report, e.g.
 * `vitest: 2370 passed, 0 failed, 7 skipped`. CI log readers that know pytest-style closing lines
 * do not recognise vitest's table ("Tests  2370 passed | 7 skipped (2377)"); this line says the same
 * numbers in the form they read. Counted from the run's own results, never assumed.
 */
export default class PlainSummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed++;
        else if (state === 'failed') counts.failed++;
        else if (state === 'skipped') counts.skipped++;
      }
      // A file that failed before collecting any test (a syntax error, a failed import) counts as a failure.
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) counts.failed++;
    }
    process.stdout.write(
      `\nvitest: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`,
    );
  }
}
