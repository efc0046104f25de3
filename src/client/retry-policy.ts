export interface RetryOptions {
  /** Total attempts including the first; 1 disables retries. Default 4. */
  maxAttempts?: number;
  /** First backoff step; doubled per attempt with full jitter. Default 200 ms. */
  baseDelayMs?: number;
  /** Cap on one wait, including a server's Retry-After. Default 30 s. */
  maxDelayMs?: number;
}

export const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);

/** Seconds or an HTTP date, as RFC 9110 allows; undefined when absent or unparseable. */
export function retryAfterMs(
  header: string | string[] | undefined,
  now: number = Date.now(),
): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Exponential backoff with full jitter, unless the server said how long to wait. */
export function backoffMs(
  attempt: number,
  options: Required<RetryOptions>,
  serverSaid: number | undefined,
  random: () => number = Math.random,
): number {
  if (serverSaid !== undefined) return Math.min(serverSaid, options.maxDelayMs);
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(random() * ceiling);
}
