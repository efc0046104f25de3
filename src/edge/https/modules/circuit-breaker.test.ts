import { describe, expect, it } from 'vitest';
import { CIRCUIT_BREAKER_DEFAULTS } from '../../../schemas/route-modules.js';
import {
  CircuitBreaker,
  type CircuitBreakerConfig,
  type CircuitBreakerState,
  upstreamOutcome,
} from './circuit-breaker.js';

/** A breaker on a fake clock (ms), advanced by hand. */
function setup(overrides: Partial<CircuitBreakerConfig> = {}) {
  const clock = { now: 1_000_000 };
  const changes: Array<[CircuitBreakerState, CircuitBreakerState]> = [];
  const breaker = new CircuitBreaker(
    { ...CIRCUIT_BREAKER_DEFAULTS, ...overrides },
    { now: () => clock.now, onStateChange: (state, previous) => changes.push([state, previous]) },
  );
  const record = (outcome: 'success' | 'error', times: number) => {
    for (let i = 0; i < times; i++) {
      expect(breaker.allow()).toBe(true);
      breaker.record(outcome);
    }
  };
  const advance = (ms: number) => {
    clock.now += ms;
  };
  return { breaker, clock, changes, record, advance };
}

describe('upstreamOutcome', () => {
  it('counts 5xx and no answer as errors, everything else as success', () => {
    expect(upstreamOutcome(undefined)).toBe('error');
    expect(upstreamOutcome(500)).toBe('error');
    expect(upstreamOutcome(502)).toBe('error');
    expect(upstreamOutcome(599)).toBe('error');
    expect(upstreamOutcome(200)).toBe('success');
    expect(upstreamOutcome(404)).toBe('success');
    expect(upstreamOutcome(429)).toBe('success');
    expect(upstreamOutcome(499)).toBe('success');
  });
});

describe('CircuitBreaker', () => {
  it('starts closed and allows requests', () => {
    const { breaker } = setup();
    expect(breaker.state).toBe('closed');
    expect(breaker.allow()).toBe(true);
    expect(breaker.stats).toEqual({ requests: 0, errors: 0 });
  });

  it('does not trip below the volume threshold, however many of the requests failed', () => {
    const { breaker, record } = setup({ volume_threshold: 20 });
    record('error', 19);
    expect(breaker.state).toBe('closed');
    expect(breaker.stats).toEqual({ requests: 19, errors: 19 });
    expect(breaker.allow()).toBe(true);
  });

  it('trips once the volume is reached and the error fraction is at the threshold', () => {
    const { breaker, record, changes } = setup({ volume_threshold: 20, error_threshold_percentage: 0.5 });
    record('success', 10);
    record('error', 9);
    expect(breaker.state).toBe('closed');
    // 20 requests, 10 errors: exactly 0.5 trips.
    record('error', 1);
    expect(breaker.state).toBe('open');
    expect(breaker.allow()).toBe(false);
    expect(changes).toEqual([['open', 'closed']]);
  });

  it('stays closed while the error fraction is below the threshold', () => {
    const { breaker, record } = setup({ volume_threshold: 10, error_threshold_percentage: 0.5 });
    record('success', 11);
    record('error', 10);
    expect(breaker.stats).toEqual({ requests: 21, errors: 10 });
    expect(breaker.state).toBe('closed');
    // A success can trip too: here it brings the volume up to the threshold.
    const late = setup({ volume_threshold: 4, error_threshold_percentage: 0.5 });
    late.record('error', 3);
    expect(late.breaker.state).toBe('closed');
    late.record('success', 1);
    expect(late.breaker.state).toBe('open');
  });

  it('never trips without errors, even with a threshold of 0', () => {
    const { breaker, record } = setup({ volume_threshold: 0, error_threshold_percentage: 0 });
    record('success', 50);
    expect(breaker.state).toBe('closed');
    record('error', 1);
    expect(breaker.state).toBe('open');
  });

  it('stays open for tripped_duration, then lets exactly one probe through', () => {
    const { breaker, record, advance, changes } = setup({ volume_threshold: 2, tripped_duration: 10 });
    record('error', 2);
    expect(breaker.state).toBe('open');
    advance(9_999);
    expect(breaker.allow()).toBe(false);
    expect(breaker.state).toBe('open');
    advance(1);
    expect(breaker.allow()).toBe(true);
    expect(breaker.state).toBe('half_open');
    // Everyone else waits for the probe's outcome.
    expect(breaker.allow()).toBe(false);
    expect(breaker.allow()).toBe(false);
    expect(changes).toEqual([
      ['open', 'closed'],
      ['half_open', 'open'],
    ]);
  });

  it('closes with an empty window when the probe succeeds', () => {
    const { breaker, record, advance, changes } = setup({ volume_threshold: 2, tripped_duration: 10 });
    record('error', 2);
    advance(10_000);
    expect(breaker.allow()).toBe(true);
    breaker.record('success');
    expect(breaker.state).toBe('closed');
    expect(breaker.stats).toEqual({ requests: 0, errors: 0 });
    expect(breaker.allow()).toBe(true);
    // The old errors are gone: one more error does not trip it (volume 1 < 2).
    breaker.record('error');
    expect(breaker.state).toBe('closed');
    expect(changes.at(-1)).toEqual(['closed', 'half_open']);
  });

  it('opens again for a full tripped_duration when the probe fails', () => {
    const { breaker, record, advance, changes } = setup({ volume_threshold: 2, tripped_duration: 10 });
    record('error', 2);
    advance(10_000);
    expect(breaker.allow()).toBe(true);
    advance(500);
    breaker.record('error');
    expect(breaker.state).toBe('open');
    advance(9_999);
    expect(breaker.allow()).toBe(false);
    advance(1);
    expect(breaker.allow()).toBe(true);
    breaker.record('success');
    expect(breaker.state).toBe('closed');
    expect(changes.map(([state]) => state)).toEqual(['open', 'half_open', 'open', 'half_open', 'closed']);
  });

  it('lets a new probe through when the previous one never reported', () => {
    const { breaker, record, advance } = setup({ volume_threshold: 1, tripped_duration: 5 });
    record('error', 1);
    advance(5_000);
    expect(breaker.allow()).toBe(true);
    advance(4_999);
    expect(breaker.allow()).toBe(false);
    advance(1);
    expect(breaker.allow()).toBe(true);
    expect(breaker.state).toBe('half_open');
  });

  it('ignores outcomes recorded while open (requests started before the trip)', () => {
    const { breaker, record, advance } = setup({ volume_threshold: 2, tripped_duration: 10 });
    record('error', 2);
    breaker.record('success');
    breaker.record('success');
    expect(breaker.state).toBe('open');
    expect(breaker.stats).toEqual({ requests: 0, errors: 0 });
    advance(10_000);
    expect(breaker.allow()).toBe(true);
  });

  it('probes on the next request when tripped_duration is 0', () => {
    const { breaker, record } = setup({ volume_threshold: 1, tripped_duration: 0 });
    record('error', 1);
    expect(breaker.state).toBe('open');
    expect(breaker.allow()).toBe(true);
    expect(breaker.state).toBe('half_open');
  });

  describe('rolling window', () => {
    // 10 s window in 10 buckets of 1 s.
    const config = {
      rolling_window: 10,
      num_buckets: 10,
      volume_threshold: 10,
      error_threshold_percentage: 0.5,
    };

    it('lets old errors fall out of the window one bucket at a time', () => {
      const { breaker, record, advance, clock } = setup(config);
      clock.now = 0;
      record('error', 4); // bucket 0
      advance(1_000);
      record('error', 4); // bucket 1
      expect(breaker.stats).toEqual({ requests: 8, errors: 8 });
      advance(8_999); // t = 9.999 s: still bucket 9, both buckets in the window
      expect(breaker.stats).toEqual({ requests: 8, errors: 8 });
      advance(1); // t = 10 s: bucket 10, bucket 0 is out
      expect(breaker.stats).toEqual({ requests: 4, errors: 4 });
      // 4 old errors + 4 new successes + 2 new errors = 10 requests, 6 errors: trips.
      record('success', 4);
      expect(breaker.state).toBe('closed');
      record('error', 2);
      expect(breaker.state).toBe('open');
    });

    it('trips when the errors of 10 consecutive buckets add up, not when they are spread wider', () => {
      const dense = setup(config);
      for (let second = 0; second < 9; second++) {
        dense.record('error', 1);
        dense.advance(1_000);
      }
      expect(dense.breaker.state).toBe('closed');
      dense.record('error', 1); // the 10th error within buckets 0..9
      expect(dense.breaker.state).toBe('open');

      const sparse = setup(config);
      for (let i = 0; i < 60; i++) {
        sparse.record('error', 1);
        sparse.advance(1_200); // at most 9 of these land within any 10 consecutive buckets
        expect(sparse.breaker.stats.requests).toBeLessThan(10);
      }
      expect(sparse.breaker.state).toBe('closed');
    });

    it('forgets everything after a quiet window, and reuses ring slots correctly', () => {
      const { breaker, record, advance } = setup(config);
      record('error', 9);
      advance(10_000);
      expect(breaker.stats).toEqual({ requests: 0, errors: 0 });
      // Same ring slot as the old bucket: it must start from zero, not from 9.
      record('error', 1);
      expect(breaker.stats).toEqual({ requests: 1, errors: 1 });
      expect(breaker.state).toBe('closed');
      advance(25_000);
      record('success', 9);
      expect(breaker.stats).toEqual({ requests: 9, errors: 0 });
    });

    it('uses a single bucket when num_buckets is 1', () => {
      const { breaker, record, advance } = setup({ ...config, num_buckets: 1, volume_threshold: 3 });
      record('error', 2);
      advance(9_999);
      expect(breaker.stats.requests).toBe(2);
      advance(1);
      expect(breaker.stats.requests).toBe(0);
      record('error', 2);
      expect(breaker.state).toBe('closed');
    });

    it('copes with a rolling_window of 0 (a 1 ms window)', () => {
      const { breaker, record, advance } = setup({ ...config, rolling_window: 0, volume_threshold: 2 });
      record('error', 1);
      advance(1);
      record('error', 1);
      expect(breaker.state).toBe('closed');
      record('error', 1);
      expect(breaker.state).toBe('open');
    });

    it('ignores buckets from the future after the clock steps back', () => {
      const { breaker, record, advance } = setup(config);
      record('error', 5);
      advance(-3_000);
      expect(breaker.stats).toEqual({ requests: 0, errors: 0 });
      record('success', 1);
      expect(breaker.stats).toEqual({ requests: 1, errors: 0 });
    });
  });

  it('uses a monotonic clock by default', () => {
    const breaker = new CircuitBreaker({ ...CIRCUIT_BREAKER_DEFAULTS, volume_threshold: 1 });
    breaker.record('error');
    expect(breaker.state).toBe('open');
    expect(breaker.allow()).toBe(false);
  });
});
