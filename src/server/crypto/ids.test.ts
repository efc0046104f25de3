import { describe, expect, it } from 'vitest';
import { idTimeMs, newId, timeOrderedId } from './ids.js';

describe('time-ordered ids', () => {
  it('carry the millisecond they were made, which idTimeMs reads back', () => {
    const made = Date.parse('2026-11-26T05:00:00.123Z');
    expect(idTimeMs(`ev_${timeOrderedId(made)}`)).toBe(made);
    const before = Date.now();
    const id = newId('ev');
    expect(idTimeMs(id)).toBeGreaterThanOrEqual(before);
    expect(idTimeMs(id)).toBeLessThanOrEqual(Date.now());
  });

  it('refuse to read what is not one', () => {
    expect(() => idTimeMs('ev_not-base62!')).toThrow(/not a time-ordered id/);
  });
});
