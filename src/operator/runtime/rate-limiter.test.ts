import { afterEach, describe, expect, it, vi } from 'vitest';
import { RateLimiter } from './rate-limiter.js';

function clocked(qps: number, burst: number) {
  let now = 0;
  const limiter = new RateLimiter({ qps, burst, now: () => now });
  return {
    limiter,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('RateLimiter', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('hands out the burst at once, then one token per 1/qps, queuing callers in order', () => {
    const { limiter } = clocked(5, 3);
    expect([limiter.reserve(), limiter.reserve(), limiter.reserve()]).toEqual([0, 0, 0]);
    expect([limiter.reserve(), limiter.reserve(), limiter.reserve()]).toEqual([200, 400, 600]);
    expect(limiter.tokens).toBe(-3);
  });

  it('refills at qps up to the burst, never beyond', () => {
    const { limiter, advance } = clocked(10, 2);
    limiter.reserve();
    limiter.reserve();
    advance(100);
    expect(limiter.tokens).toBeCloseTo(1);
    advance(60_000);
    expect(limiter.tokens).toBe(2);
    expect([limiter.reserve(), limiter.reserve(), limiter.reserve()]).toEqual([0, 0, 100]);
  });

  it('pause() holds everyone back for the Retry-After, then restarts from an empty bucket', () => {
    const { limiter, advance } = clocked(10, 100);
    limiter.pause(5000);
    limiter.pause(1); // a shorter pause does not shorten a longer one
    expect(limiter.pausedUntil).toBe(5000);
    expect(limiter.reserve()).toBe(5100);
    expect(limiter.reserve()).toBe(5200);
    advance(5000);
    expect(limiter.reserve()).toBe(300);
  });

  it('acquire() resolves after the wait, and a pause that starts meanwhile still applies', async () => {
    vi.useFakeTimers({ now: 0 });
    const limiter = new RateLimiter({ qps: 1, burst: 1 });
    await limiter.acquire();
    let done = false;
    const waiting = limiter.acquire().then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(500);
    limiter.pause(3000); // a 429 said Retry-After: 3
    await vi.advanceTimersByTimeAsync(600);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(2000);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1000);
    await waiting;
    expect(done).toBe(true);
  });

  it('acquire() rejects when its signal aborts', async () => {
    const limiter = new RateLimiter({ qps: 0.001, burst: 1 });
    await limiter.acquire();
    const abort = new AbortController();
    const waiting = limiter.acquire(abort.signal);
    abort.abort();
    await expect(waiting).rejects.toThrow(/abort/i);
  });

  it('with qps 0 never waits, except for a pause', () => {
    const { limiter, advance } = clocked(0, 1);
    expect(Array.from({ length: 1000 }, () => limiter.reserve()).every((wait) => wait === 0)).toBe(true);
    limiter.pause(700);
    expect(limiter.reserve()).toBe(700);
    advance(700);
    expect(limiter.reserve()).toBe(0);
  });
});
