import type { Reporter, TestCase, TestModule, Vitest } from 'vitest/node';

/**
 * Says why tests were skipped. vitest's default reporter, writing to a log rather than a terminal,
 * prints a file's line with its count of skipped tests ("(5 tests | 5 skipped)") and no test names
 * or skip notes; this reporter prints the reasons under that line:
 *
 *    ✓ |api| test/edge/netns.test.ts (5 tests | 5 skipped) 3ms
 *      ↓ 5 tests [skipped: network namespaces are not available here (…)]
 *
 * and once more at the end of the run, one line per project and reason. A reason is the note of
 * `context.skip(condition, note)` or the suite's `describeUnless(reason, …)` (skip-reason.ts). A
 * skip without one is printed as such, so a new one cannot hide.
 */
export default class SkipReasonsReporter implements Reporter {
  private filtered = false;
  /** `|project| reason` → how many tests, in which files. */
  private readonly run = new Map<string, { tests: number; files: Set<string> }>();

  onInit(vitest: Vitest): void {
    // `-t pattern` skips every test it does not match: no reason to give there.
    this.filtered = Boolean(vitest.config.testNamePattern);
  }

  onTestModuleEnd(testModule: TestModule): void {
    const byReason = new Map<string, TestCase[]>();
    for (const test of testModule.children.allTests()) {
      const result = test.result();
      if (result.state !== 'skipped' || test.options.mode === 'todo') continue;
      let reason = result.note ?? test.meta().skipReason;
      if (reason === undefined) {
        if (this.filtered) continue;
        reason = testModule.state() === 'failed' ? 'not run: the file or suite failed' : 'NO REASON GIVEN';
      }
      byReason.set(reason, [...(byReason.get(reason) ?? []), test]);
    }
    const project = testModule.project.name ? `|${testModule.project.name}| ` : '';
    const lines: string[] = [];
    for (const [reason, tests] of byReason) {
      const what = tests.length === 1 ? (tests[0] as TestCase).name : `${tests.length} tests`;
      lines.push(`     ↓ ${what} [skipped: ${reason}]\n`);
      const key = `${project}${reason}`;
      const total = this.run.get(key) ?? { tests: 0, files: new Set<string>() };
      total.tests += tests.length;
      total.files.add(testModule.relativeModuleId);
      this.run.set(key, total);
    }
    process.stdout.write(lines.join(''));
  }

  onTestRunEnd(): void {
    if (this.run.size === 0) return;
    const lines = [...this.run].map(([key, { tests, files }]) => {
      const where = files.size === 1 ? [...files][0] : `${files.size} files`;
      const count = `${tests} test${tests === 1 ? '' : 's'} in ${where}`;
      return `  ↓ ${key} (${count})\n`;
    });
    process.stdout.write(`\nSkipped, and why:\n${lines.join('')}`);
  }
}
