import { ROUTE_MODULE_SCHEMAS } from '../../../schemas/route-module-table.js';
import type { CircuitBreakerModuleInput } from '../../../schemas/route-modules.js';
import { Pages } from '../pages.js';
import type { EdgeRouteModule, ModuleConfig } from './route-module.js';

export type CircuitBreakerConfig = Pick<
  CircuitBreakerModuleInput,
  'tripped_duration' | 'rolling_window' | 'num_buckets' | 'volume_threshold' | 'error_threshold_percentage'
>;

export type CircuitBreakerState = 'closed' | 'open' | 'half_open';
export type CircuitBreakerOutcome = 'success' | 'error';

export interface CircuitBreakerOptions {
  /** Clock in ms; injectable for tests. Monotonic by default, so wall-clock steps do not matter. */
  now?: () => number;
  /** Called on every state change, for metrics and logs. */
  onStateChange?: (state: CircuitBreakerState, previous: CircuitBreakerState) => void;
}

/**
 * The outcome to record for an upstream exchange: a 5xx answer, or no answer at all (no upstream
 * reachable, connection refused or reset, timeout), is an error; anything else is a success.
 */
export function upstreamOutcome(statusCode: number | undefined): CircuitBreakerOutcome {
  return statusCode === undefined || statusCode >= 500 ? 'error' : 'success';
}

/**
 * A Hystrix-style circuit breaker for one route.
 *
 * - Closed: every request is allowed; outcomes are counted in a rolling window of `rolling_window`
 *   seconds split into `num_buckets` buckets, so counts older than the window fall out one bucket
 *   at a time. When the window holds at least `volume_threshold` requests and at least one error,
 *   and errors / requests >= `error_threshold_percentage`, the breaker trips (open). The "at least
 *   one error" keeps a threshold of 0 from tripping a perfectly healthy route.
 * - Open: `allow()` is false (the edge answers 503 without contacting the upstream) until
 *   `tripped_duration` seconds have passed; outcomes recorded meanwhile belong to requests started
 *   before the trip and are ignored.
 * - Half-open: the first `allow()` after that lets one probe through and refuses the rest. The
 *   next outcome recorded decides: success closes the breaker with an empty window, error opens it
 *   for another `tripped_duration`. A probe that never reports (the caller lost it) is replaced by
 *   a new one after another `tripped_duration`, so the breaker cannot stay half-open forever.
 *
 * `state` reads `open` until the first request after `tripped_duration` becomes the probe, as in
 * Hystrix: the transition happens on a request, not on a timer.
 *
 * Edge cases of the config: `rolling_window` 0 is taken as a 1 ms window (the breaker then only
 * trips when `volume_threshold` requests arrive within that millisecond); `tripped_duration` 0 probes on
 * the very next request.
 */
export class CircuitBreaker {
  readonly #now: () => number;
  readonly #onStateChange: CircuitBreakerOptions['onStateChange'];
  readonly #trippedMs: number;
  readonly #bucketMs: number;
  readonly #volumeThreshold: number;
  readonly #errorThreshold: number;
  /** Ring of buckets; `#epochs[i]` is the absolute bucket number whose counts slot i holds. */
  readonly #epochs: number[];
  readonly #requests: number[];
  readonly #errors: number[];
  #state: CircuitBreakerState = 'closed';
  /** When the breaker last opened, or when the current probe was let through. */
  #since = 0;

  constructor(config: CircuitBreakerConfig, options: CircuitBreakerOptions = {}) {
    this.#now = options.now ?? (() => performance.now());
    this.#onStateChange = options.onStateChange;
    this.#trippedMs = config.tripped_duration * 1000;
    const buckets = Math.max(1, Math.floor(config.num_buckets));
    this.#bucketMs = Math.max(1, config.rolling_window * 1000) / buckets;
    this.#volumeThreshold = config.volume_threshold;
    this.#errorThreshold = config.error_threshold_percentage;
    this.#epochs = new Array<number>(buckets).fill(Number.NEGATIVE_INFINITY);
    this.#requests = new Array<number>(buckets).fill(0);
    this.#errors = new Array<number>(buckets).fill(0);
  }

  get state(): CircuitBreakerState {
    return this.#state;
  }

  /** Requests and errors counted in the current window (empty while not closed). */
  get stats(): { requests: number; errors: number } {
    const current = this.#epoch(this.#now());
    let requests = 0;
    let errors = 0;
    for (let i = 0; i < this.#epochs.length; i++) {
      if (this.#live(this.#epochs[i]!, current)) {
        requests += this.#requests[i]!;
        errors += this.#errors[i]!;
      }
    }
    return { requests, errors };
  }

  /** Whether a request may go to the upstream now. A true from half-open makes it the probe. */
  allow(): boolean {
    if (this.#state === 'closed') return true;
    const now = this.#now();
    // Open: wait out the trip. Half-open: the probe is out; replace it only if it got lost.
    if (now - this.#since < this.#trippedMs) return false;
    this.#since = now;
    this.#transition('half_open');
    return true;
  }

  record(outcome: CircuitBreakerOutcome): void {
    if (this.#state === 'open') return;
    const now = this.#now();
    if (this.#state === 'half_open') {
      if (outcome === 'success') {
        this.#reset();
        this.#transition('closed');
      } else {
        this.#trip(now);
      }
      return;
    }
    const slot = this.#slot(now);
    this.#requests[slot]! += 1;
    if (outcome === 'error') this.#errors[slot]! += 1;
    const { requests, errors } = this.stats;
    if (requests >= this.#volumeThreshold && errors > 0 && errors / requests >= this.#errorThreshold) {
      this.#trip(now);
    }
  }

  #trip(now: number): void {
    this.#since = now;
    this.#reset();
    this.#transition('open');
  }

  #transition(state: CircuitBreakerState): void {
    const previous = this.#state;
    if (previous === state) return;
    this.#state = state;
    this.#onStateChange?.(state, previous);
  }

  #epoch(now: number): number {
    return Math.floor(now / this.#bucketMs);
  }

  /** A bucket counts while it is one of the newest `num_buckets` (a clock step back hides newer ones). */
  #live(epoch: number, current: number): boolean {
    return epoch <= current && epoch > current - this.#epochs.length;
  }

  /** The slot of the bucket for `now`, cleared first if it still holds an expired bucket. */
  #slot(now: number): number {
    const epoch = this.#epoch(now);
    const slot = ((epoch % this.#epochs.length) + this.#epochs.length) % this.#epochs.length;
    if (this.#epochs[slot] !== epoch) {
      this.#epochs[slot] = epoch;
      this.#requests[slot] = 0;
      this.#errors[slot] = 0;
    }
    return slot;
  }

  #reset(): void {
    this.#epochs.fill(Number.NEGATIVE_INFINITY);
    this.#requests.fill(0);
    this.#errors.fill(0);
  }
}

/**
 * `circuit_breaker`: 503 without contacting the upstream while the route's breaker is open; every
 * upstream answer (5xx and no answer count as errors) feeds it.
 */
export const circuitBreakerModule: EdgeRouteModule<ModuleConfig<'circuit_breaker'>> = {
  schema: ROUTE_MODULE_SCHEMAS.circuit_breaker.input,
  compile(config, context) {
    const breaker = new CircuitBreaker(config, {
      onStateChange: (state) => context.onCircuitBreakerState?.(context.routeId, state),
    });
    return {
      onRequest: (exchange) => (breaker.allow() ? undefined : exchange.page(Pages.circuitOpen())),
      onUpstreamResult: (result) => breaker.record(result === 'error' ? 'error' : upstreamOutcome(result)),
    };
  },
};
