import { describe, expect, it } from 'vitest';
import { idTimeMs, newId, randomId, timeOrderedId } from './ids.js';

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

describe('random ids', () => {
  it('are the prefix and 27 base62 characters, each character about equally likely', () => {
    const counts = new Map<string, number>();
    const seen = new Set<string>();
    const made = 20_000;
    for (let i = 0; i < made; i++) {
      const id = randomId('op');
      expect(id).toMatch(/^op_[0-9A-Za-z]{27}$/);
      seen.add(id);
      for (const char of id.slice(3)) counts.set(char, (counts.get(char) ?? 0) + 1);
    }
    expect(seen.size).toBe(made);
    expect(counts.size).toBe(62);
    // 540,000 characters: each of 62 expects 8,710 (standard deviation 93). A byte taken modulo 62
    // without rejection would make '0'-'7' (where 248-255 land) a quarter likelier: 10,547 each.
    const expected = (made * 27) / 62;
    for (const count of counts.values()) expect(Math.abs(count - expected)).toBeLessThan(5 * 93);
    const mean = (chars: string[]) =>
      chars.reduce((sum, char) => sum + (counts.get(char) ?? 0), 0) / chars.length;
    const favoured = [...'01234567'];
    const others = [...'89ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'];
    expect(Math.abs(mean(favoured) - mean(others))).toBeLessThan(120);
  });
});
