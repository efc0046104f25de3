import { describe, expect, it } from 'vitest';
import { backoffMs, retryAfterMs } from './retry-policy.js';

const options = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 1000 };

describe('retryAfterMs', () => {
  it('reads seconds and HTTP dates', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs('0.5')).toBe(500);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:02 GMT', now)).toBe(2000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});

describe('backoffMs', () => {
  it('grows exponentially under the cap, jittered below the ceiling', () => {
    expect(backoffMs(1, options, undefined, () => 1)).toBe(100);
    expect(backoffMs(3, options, undefined, () => 1)).toBe(400);
    expect(backoffMs(10, options, undefined, () => 1)).toBe(1000);
    expect(backoffMs(3, options, undefined, () => 0.5)).toBe(200);
  });
  it('honours Retry-After but never beyond the cap', () => {
    expect(backoffMs(1, options, 700)).toBe(700);
    expect(backoffMs(1, options, 60_000)).toBe(1000);
  });
});
