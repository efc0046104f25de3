import { RateLimiter } from './rate-limiter.js';

export interface BackoffOptions {
  /** First retry delay. Default 1 s. */
  baseMs?: number;
  /** Cap. Default 5 min. */
  maxMs?: number;
  /** Fraction taken off at random, so failures of many keys do not retry in step. Default 0.2. */
  jitter?: number;
}

export interface WorkQueueOptions {
  backoff?: BackoffOptions;
  /**
   * Global bucket for rate-limited adds (retries and error requeues), shared by every kind's
   * queue; default a private 10 qps / burst 100 bucket. As in client-go, plain `add`s (informer
   * events, resyncs) are not throttled: only retry storms are.
   */
  limiter?: RateLimiter;
  random?: () => number;
}

/**
 * Keyed work queue (key = `namespace/name`), with client-go's semantics: a key waiting in the
 * queue is held once however often it is added; a key being processed is never handed out
 * again until `done(key)`, and if it was added meanwhile it is queued again then; delayed adds
 * keep the earliest time; `addRateLimited` delays by the larger of the key's exponential
 * backoff and the global token bucket; `forget` resets the backoff after a success.
 */
export class WorkQueue {
  readonly #queue: string[] = [];
  /** Keys that need processing: in #queue, or processing and added again. */
  readonly #dirty = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  readonly #failures = new Map<string, number>();
  readonly #getters: Array<(key: string | undefined) => void> = [];
  readonly #idleWaiters = new Set<() => void>();
  readonly #limiter: RateLimiter;
  readonly #backoff: Required<BackoffOptions>;
  readonly #random: () => number;
  #shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.#limiter = options.limiter ?? new RateLimiter({ qps: 10, burst: 100 });
    this.#backoff = {
      baseMs: options.backoff?.baseMs ?? 1000,
      maxMs: options.backoff?.maxMs ?? 300_000,
      jitter: options.backoff?.jitter ?? 0.2,
    };
    this.#random = options.random ?? Math.random;
  }

  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    if (this.#processing.has(key)) return;
    const getter = this.#getters.shift();
    if (getter) {
      this.#dirty.delete(key);
      this.#processing.add(key);
      getter(key);
    } else {
      this.#queue.push(key);
    }
  }

  /** Adds after `ms`; a key already waiting keeps whichever time is earlier. */
  addAfter(key: string, ms: number): void {
    if (this.#shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const waiting = this.#delayed.get(key);
    if (waiting && waiting.at <= at) return;
    if (waiting) clearTimeout(waiting.timer);
    const timer = setTimeout(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.#delayed.set(key, { at, timer });
  }

  /** Adds after the key's next backoff step (or the global bucket's wait, if longer); returns the delay. */
  addRateLimited(key: string): number {
    const delay = Math.max(this.backoffMs(key), this.#limiter.reserve());
    this.addAfter(key, delay);
    return delay;
  }

  /** Next backoff step of a key (and counts one more failure): base * 2^failures, capped, jittered down. */
  backoffMs(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    const { baseMs, maxMs, jitter } = this.#backoff;
    const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(failures, 40));
    return Math.round(ceiling * (1 - jitter * this.#random()));
  }

  /** Resets a key's backoff (after a successful reconcile). */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  /**
   * Drops a key's pending delayed add. After a reconcile that succeeded and asked for no requeue,
   * an older "look again in 10 s" or retry timer has nothing left to do: firing it would only
   * cost a redundant reconcile (and API calls) per key.
   */
  cancelDelayed(key: string): void {
    const waiting = this.#delayed.get(key);
    if (!waiting) return;
    clearTimeout(waiting.timer);
    this.#delayed.delete(key);
  }

  /** Failures counted for a key since its last `forget`. */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /**
   * The next key to process, waiting for one; undefined once the queue is shut down. The caller
   * owns the key until it calls `done(key)`.
   */
  get(): Promise<string | undefined> {
    if (this.#shuttingDown) return Promise.resolve(undefined);
    const key = this.#queue.shift();
    if (key !== undefined) {
      this.#dirty.delete(key);
      this.#processing.add(key);
      return Promise.resolve(key);
    }
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  /** Ends processing of a key; if it was added meanwhile, it is queued again now. */
  done(key: string): void {
    this.#processing.delete(key);
    if (this.#dirty.has(key) && !this.#shuttingDown) {
      this.#dirty.delete(key);
      this.add(key);
    }
    if (this.#processing.size === 0) for (const wake of this.#idleWaiters) wake();
  }

  /** Keys ready to be processed (the queue depth metric); delayed keys are not counted. */
  get length(): number {
    return this.#queue.length;
  }

  /** Keys waiting for a delayed add. */
  get delayedCount(): number {
    return this.#delayed.size;
  }

  get processingCount(): number {
    return this.#processing.size;
  }

  isProcessing(key: string): boolean {
    return this.#processing.has(key);
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /**
   * Stops handing out keys (waiting `get()`s resolve undefined) and drops queued and delayed
   * ones; keys being processed may still finish and call `done`.
   */
  shutDown(): void {
    this.#shuttingDown = true;
    for (const { timer } of this.#delayed.values()) clearTimeout(timer);
    this.#delayed.clear();
    this.#queue.length = 0;
    this.#dirty.clear();
    for (const getter of this.#getters.splice(0)) getter(undefined);
  }

  /** Resolves when no key is being processed. */
  async idle(): Promise<void> {
    while (this.#processing.size > 0) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.#idleWaiters.delete(wake);
          resolve();
        };
        this.#idleWaiters.add(wake);
      });
    }
  }
}
