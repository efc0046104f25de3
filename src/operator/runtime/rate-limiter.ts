import { delay } from './delay.js';

export interface RateLimiterOptions {
  /** Sustained rate; 0 or less disables limiting. */
  qps: number;
  /** Tokens available at once (and the bucket's size). */
  burst: number;
  /** Clock in ms; injectable for tests. */
  now?: () => number;
}

/**
 * Token bucket. `reserve()` takes a token now and says how long to wait before using it (tokens
 * may be borrowed, so callers queue up fairly in order); `acquire()` waits that long. `pause(ms)`
 * holds every caller back after a 429 with Retry-After, and the bucket refills only from then.
 */
export class RateLimiter {
  readonly qps: number;
  readonly burst: number;
  readonly #now: () => number;
  #tokens: number;
  /** Refill is accounted up to here; in the future while paused. */
  #last: number;
  #pausedUntil = 0;

  constructor(options: RateLimiterOptions) {
    this.qps = options.qps;
    this.burst = Math.max(1, options.burst);
    this.#now = options.now ?? Date.now;
    this.#tokens = this.burst;
    this.#last = this.#now();
  }

  get unlimited(): boolean {
    return !(this.qps > 0);
  }

  /** Tokens left now (negative when callers are already waiting). */
  get tokens(): number {
    this.#refill(this.#now());
    return this.#tokens;
  }

  /** Takes one token and returns the ms to wait before the action it pays for may run. */
  reserve(): number {
    const now = this.#now();
    if (this.unlimited) return Math.max(0, this.#pausedUntil - now);
    this.#refill(now);
    this.#tokens -= 1;
    const untilRefillStarts = Math.max(0, this.#last - now);
    const deficit = this.#tokens < 0 ? (-this.#tokens * 1000) / this.qps : 0;
    return Math.ceil(untilRefillStarts + deficit);
  }

  /** Waits for a token (and for any pause). Rejects with the signal's reason when aborted. */
  async acquire(signal?: AbortSignal): Promise<void> {
    const wait = this.reserve();
    if (wait > 0) await delay(wait, signal);
    // A pause that began while this caller slept still applies to it.
    for (let left = this.#pausedUntil - this.#now(); left > 0; left = this.#pausedUntil - this.#now()) {
      await delay(left, signal);
    }
  }

  /** Nobody gets a token for `ms` (a server's Retry-After); afterwards the bucket starts empty. */
  pause(ms: number): void {
    const now = this.#now();
    const until = now + Math.max(0, ms);
    if (until <= this.#pausedUntil) return;
    this.#pausedUntil = until;
    if (this.unlimited) return;
    this.#refill(now);
    this.#tokens = Math.min(this.#tokens, 0);
    this.#last = Math.max(this.#last, until);
  }

  /** When the current pause ends (0 when none was ever set). */
  get pausedUntil(): number {
    return this.#pausedUntil;
  }

  #refill(now: number): void {
    if (now <= this.#last) return;
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) * this.qps) / 1000);
    this.#last = now;
  }
}
