import { inject, type RunnerTestSuite, TestRunner } from 'vitest';

/**
 * The postgres project's runner. Without PostgreSQL its global setup gives a skip reason: then no
 * suite hook runs (no test server is started) and every test skips itself with that reason, so the
 * run reports them as skipped rather than passed. With PostgreSQL it is the default runner.
 */
export default class PostgresTestRunner extends TestRunner {
  override async onBeforeRunSuite(suite: RunnerTestSuite): Promise<void> {
    const reason = inject('postgresSkipReason');
    if (reason) {
      // The hooks object is the suite's own (vitest's setSuiteHooks is not a setter), so edit it in place.
      const hooks = TestRunner.getSuiteHooks(suite);
      for (const list of [
        hooks.beforeAll,
        hooks.afterAll,
        hooks.aroundAll,
        hooks.afterEach,
        hooks.aroundEach,
      ]) {
        list.length = 0;
      }
      hooks.beforeEach.splice(0, hooks.beforeEach.length, (context) =>
        context.skip(`no PostgreSQL: ${reason}`),
      );
    }
    await super.onBeforeRunSuite(suite);
  }
}
