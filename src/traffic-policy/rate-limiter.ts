/**
 * A sliding-window rate limiter: the count of the current fixed window plus the previous window's
 * count weighted by how much of it still overlaps the sliding window. O(1) memory per key, and
 * counters live in this process only, so every edge process limits on its own.
 */

interface Bucket {
  /** Index of the fixed window `current` counts (`floor(now / windowMs)`). */
  window: number;
  current: number;
  previous: number;
}

export type Admission = { allowed: true } | { allowed: false; retryAfterMs: number };

export class SlidingWindowLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private sweptWindow = -1;

  constructor(
    readonly capacity: number,
    readonly windowMs: number,
  ) {}

  /** Counts one request of `key` at `now` (ms) when it is within the limit. */
  take(key: string, now: number): Admission {
    const window = Math.floor(now / this.windowMs);
    this.sweep(window);
    const bucket = this.roll(this.buckets.get(key), window);
    const elapsed = now - window * this.windowMs;
    const weight = 1 - elapsed / this.windowMs;
    // The epsilon keeps float rounding from refusing a client that waited exactly Retry-After.
    if (bucket.previous * weight + bucket.current + 1 <= this.capacity + 1e-9) {
      bucket.current += 1;
      this.buckets.set(key, bucket);
      return { allowed: true };
    }
    this.buckets.set(key, bucket);
    // Whole milliseconds, rounded up but not for float noise (1000.0000000000005).
    return { allowed: false, retryAfterMs: Math.ceil(this.retryAfter(bucket, elapsed) - 1e-6) };
  }

  /** Keys still counted (for tests and metrics). */
  get size(): number {
    return this.buckets.size;
  }

  private roll(bucket: Bucket | undefined, window: number): Bucket {
    if (!bucket || bucket.window < window - 1) return { window, current: 0, previous: 0 };
    if (bucket.window === window - 1) return { window, current: 0, previous: bucket.current };
    return bucket;
  }

  /** Once per window, forget keys whose counts can no longer weigh anything. */
  private sweep(window: number): void {
    if (window === this.sweptWindow) return;
    this.sweptWindow = window;
    for (const [key, bucket] of this.buckets) if (bucket.window < window - 1) this.buckets.delete(key);
  }

  /**
   * How long until one more request fits: within this window the previous count keeps fading;
   * if this window's own count is already full, the wait runs into the next one, where this
   * window's count fades in turn.
   */
  private retryAfter(bucket: Bucket, elapsed: number): number {
    const room = this.capacity - 1 - bucket.current;
    if (room >= 0 && bucket.previous > 0) {
      return Math.max(0, this.windowMs * (1 - room / bucket.previous) - elapsed);
    }
    const untilNext = this.windowMs - elapsed;
    return untilNext + this.windowMs * Math.max(0, 1 - (this.capacity - 1) / bucket.current);
  }
}
