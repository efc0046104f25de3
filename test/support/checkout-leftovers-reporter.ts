import { execFileSync } from 'node:child_process';
import type { Reporter, Vitest } from 'vitest/node';

/**
 * Warns when the checkout gained files during the run: tests write into temporary directories they
 * remove, never into the repository (a fuzzer's database, a build left beside the sources). Compares
 * `git status --porcelain --ignored`'s untracked and ignored entries before and after the run; a
 * directory that was already there is one entry, so only new paths are caught, not new files inside
 * an old directory. Anything else writing to the checkout meanwhile is reported too, hence a warning
 * rather than a failure. Nothing is checked outside a git checkout or in watch mode.
 */
export default class CheckoutLeftoversReporter implements Reporter {
  private root = '';
  private before: Set<string> | undefined;

  onInit(vitest: Vitest): void {
    if (vitest.config.watch) return;
    this.root = vitest.config.root;
    this.before = this.untracked();
  }

  onTestRunEnd(): void {
    if (!this.before) return;
    const after = this.untracked();
    if (!after) return;
    const added = [...after].filter((path) => !this.before?.has(path));
    if (added.length === 0) return;
    process.stdout.write(
      `\nWARNING: the checkout gained ${added.length} untracked path(s) during the run; tests write into temporary directories they remove:\n${added.map((path) => `  ${path}\n`).join('')}`,
    );
  }

  /** Untracked and ignored paths (`??` and `!!` entries), or undefined outside a git checkout. */
  private untracked(): Set<string> | undefined {
    try {
      const status = execFileSync('git', ['status', '--porcelain', '--ignored', '-z'], {
        cwd: this.root,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        timeout: 30_000,
      });
      return new Set(
        status
          .split('\0')
          .filter((entry) => entry.startsWith('?? ') || entry.startsWith('!! '))
          .map((entry) => entry.slice(3)),
      );
    } catch {
      return undefined;
    }
  }
}
