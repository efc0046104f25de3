import { describe } from 'vitest';

declare module 'vitest' {
  interface TaskMeta {
    /** Why the suite was skipped; its tests inherit it (printed by skip-reasons-reporter.ts). */
    skipReason?: string;
  }
}

/**
 * `describe(name, fn)`, or, when there is a reason not to run it here (a missing tool, no Docker
 * engine, no root), the same suite skipped and saying why: its name ends in `[skipped: reason]` and
 * its tests carry the reason, which the run prints under the file's line. A skipped suite runs
 * none of its hooks. Inside a running test or hook, `context.skip(condition, reason)` does the same.
 */
export function describeUnless(skipReason: string | undefined, name: string, fn: () => void): void {
  if (skipReason === undefined) {
    describe(name, fn);
    return;
  }
  describe(`${name} [skipped: ${skipReason}]`, { skip: true, meta: { skipReason } }, fn);
}
