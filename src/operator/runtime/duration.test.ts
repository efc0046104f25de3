import { describe, expect, it } from 'vitest';
import { parseDuration } from './duration.js';

describe('parseDuration', () => {
  it('reads Go-style durations', () => {
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('5m')).toBe(300_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration(' 2m30s ')).toBe(150_000);
  });

  it('refuses anything else', () => {
    for (const text of ['', '10', 'm', '5 m', '-5m', '1d', 'PT5M', '5m garbage']) {
      expect(parseDuration(text)).toBeUndefined();
    }
  });
});
