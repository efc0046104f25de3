/** First and longest wait between reconnect attempts. */
const BASE_MS = 250;
const CAP_MS = 30_000;

/**
 * Exponential backoff with full jitter (a random wait up to base * 2^attempt, capped): agents that
 * lost one edge together do not all come back at the same instant.
 */
export function reconnectDelayMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(CAP_MS, BASE_MS * 2 ** Math.min(attempt, 20));
  return Math.round(random() * ceiling);
}
