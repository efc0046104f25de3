const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 15_000;

/** Exponential backoff with full jitter: `attempt` 0 waits up to 250 ms, capped at 15 s. */
export function backoffDelayMs(attempt: number): number {
  return Math.floor(Math.random() * Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** attempt));
}
