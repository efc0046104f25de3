import { describe, expect, it } from 'vitest';
import { renewalTime, retryTime } from './schedule.js';

const DAY = 24 * 60 * 60 * 1000;
const notBefore = new Date('2026-01-01T00:00:00Z');
const notAfter = new Date(notBefore.getTime() + 90 * DAY);

describe('renewalTime', () => {
  it('renews at two thirds of the lifetime, moved by at most 5% of it either way', () => {
    expect(renewalTime(notBefore, notAfter, () => 0.5).getTime()).toBe(notBefore.getTime() + 60 * DAY);
    expect(renewalTime(notBefore, notAfter, () => 0).getTime()).toBe(notBefore.getTime() + 55.5 * DAY);
    expect(renewalTime(notBefore, notAfter, () => 1).getTime()).toBe(notBefore.getTime() + 64.5 * DAY);
  });

  it('spreads certificates issued together', () => {
    const times = new Set(Array.from({ length: 50 }, () => renewalTime(notBefore, notAfter).getTime()));
    expect(times.size).toBeGreaterThan(40);
  });
});

describe('retryTime', () => {
  const now = new Date('2026-01-01T00:00:00Z');
  const bounds = { minMs: 60_000, maxMs: 3_600_000 };
  const delay = (failures: number, random: number, retryAfter?: Date) =>
    retryTime(failures, now, bounds, retryAfter, () => random).getTime() - now.getTime();

  it('doubles from the minimum up to the maximum, jittered over the upper half', () => {
    expect([1, 2, 3].map((failures) => delay(failures, 1))).toEqual([60_000, 120_000, 240_000]);
    expect(delay(1, 0)).toBe(30_000);
    expect(delay(20, 1)).toBe(3_600_000);
    expect(delay(1_000, 1)).toBe(3_600_000);
  });

  it("never comes back before the CA's Retry-After", () => {
    const later = new Date(now.getTime() + 7_200_000);
    expect(delay(1, 1, later)).toBe(7_200_000);
    expect(delay(5, 1, new Date(now.getTime() + 1_000))).toBe(960_000);
  });
});
