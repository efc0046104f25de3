/**
 * When the server works on a managed certificate again. Pure functions of the clock and a random
 * source, so the choices are tested without waiting.
 */

/** Renew at two thirds of the lifetime, as the CAs advise, spread by up to this fraction of it. */
const RENEW_AT_FRACTION = 2 / 3;
const RENEW_JITTER_FRACTION = 0.05;

/**
 * When to renew a certificate valid from `notBefore` to `notAfter`: about two thirds of the way,
 * moved by ±5% of the lifetime at random so certificates issued together (after an outage, or a
 * restore) do not all renew at once.
 */
export function renewalTime(notBefore: Date, notAfter: Date, random: () => number = Math.random): Date {
  const lifetime = notAfter.getTime() - notBefore.getTime();
  const jitter = (random() * 2 - 1) * RENEW_JITTER_FRACTION * lifetime;
  return new Date(notBefore.getTime() + lifetime * RENEW_AT_FRACTION + jitter);
}

export interface RetryBounds {
  minMs: number;
  maxMs: number;
}

/**
 * The next attempt after `failures` failures in a row: exponential from `minMs` up to `maxMs`,
 * with "full jitter" over the upper half (so a fleet of failed orders does not come back in step),
 * and never before the CA's own `Retry-After`.
 */
export function retryTime(
  failures: number,
  now: Date,
  bounds: RetryBounds,
  retryAfter?: Date,
  random: () => number = Math.random,
): Date {
  const exponent = Math.min(Math.max(failures - 1, 0), 30);
  const ceiling = Math.min(bounds.maxMs, bounds.minMs * 2 ** exponent);
  const delay = ceiling / 2 + random() * (ceiling / 2);
  const backoff = new Date(now.getTime() + delay);
  return retryAfter && retryAfter > backoff ? retryAfter : backoff;
}
