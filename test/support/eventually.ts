import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The one polling helper of the tests: wait on the condition itself, never for a fixed time (a
 * fixed sleep is a flaky test on a loaded machine and a slow one on a quiet machine).
 */

export interface WaitOptions {
  /** What is awaited, for the timeout's message. */
  what: string;
  /** Default 5 s. */
  timeoutMs?: number;
  /** Between probes; default 50 ms. */
  intervalMs?: number;
  /** More to say when it times out (a process's output, what was last seen). */
  detail?: () => string;
}

/** A wait that ran out of time (as opposed to a probe that failed). */
export class WaitTimeout extends Error {
  override readonly name = 'WaitTimeout';
}

/**
 * Probes until `check` returns something other than undefined or false, and returns it; throws
 * naming `what` when `timeoutMs` passes first.
 */
export async function waitFor<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  { what, timeoutMs = 5_000, intervalMs = 50, detail }: WaitOptions,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) {
      const more = detail ? `\n${detail()}` : '';
      throw new WaitTimeout(`timed out after ${timeoutMs} ms waiting for ${what}${more}`);
    }
    await sleep(intervalMs);
  }
}

/**
 * Probes until `ok` holds or `timeoutMs` passes, and returns the last value either way, so the
 * caller's assertion shows what was seen. For changes that reach the edge through its feed.
 */
export async function eventually<T>(
  probe: () => Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 3000,
): Promise<T> {
  let last!: T;
  await waitFor(
    async () => {
      last = await probe();
      return ok(last);
    },
    { what: 'a condition', timeoutMs },
  ).catch((error: unknown) => {
    // The caller asserts on the last value seen, which says more than a timeout would.
    if (!(error instanceof WaitTimeout)) throw error;
  });
  return last;
}

/**
 * Probes until `ok` holds and returns that value; on timeout the error names `what` and shows the
 * last value seen.
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T>,
  ok: (value: T) => boolean,
  { timeoutMs = 10_000, intervalMs = 100 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  let last: T | undefined;
  const { value } = await waitFor(
    async () => {
      last = await probe();
      return ok(last) && { value: last };
    },
    { what, timeoutMs, intervalMs, detail: () => `last: ${JSON.stringify(last)}` },
  );
  return value;
}
