import { describe, expect, it } from 'vitest';
import { PerSourceLimit } from './per-source-limit.js';

describe('PerSourceLimit', () => {
  it('refuses the slot over the cap, per address, and gives it back once released', () => {
    const limit = new PerSourceLimit(2);
    const first = limit.acquire('192.0.2.7');
    const second = limit.acquire('192.0.2.7');
    expect(first).toBeDefined();
    expect(second).toBeDefined();
    expect(limit.acquire('192.0.2.7')).toBeUndefined();
    expect(limit.acquire('192.0.2.8')).toBeDefined();
    first?.();
    expect(limit.held('192.0.2.7')).toBe(1);
    expect(limit.acquire('192.0.2.7')).toBeDefined();
  });

  it('counts an IPv4-mapped IPv6 address as the IPv4 address it maps', () => {
    const limit = new PerSourceLimit(2);
    limit.acquire('::ffff:192.0.2.7');
    limit.acquire('192.0.2.7');
    expect(limit.acquire('::ffff:192.0.2.7')).toBeUndefined();
    expect(limit.held('192.0.2.7')).toBe(2);
    // A real IPv6 address is its own source.
    expect(limit.acquire('2001:db8::7')).toBeDefined();
  });

  it('a release called twice gives back one slot, not two', () => {
    const limit = new PerSourceLimit(1);
    const release = limit.acquire('192.0.2.7');
    const other = limit.acquire('192.0.2.8');
    release?.();
    release?.();
    expect(limit.held('192.0.2.7')).toBe(0);
    expect(limit.acquire('192.0.2.7')).toBeDefined();
    expect(limit.acquire('192.0.2.7')).toBeUndefined();
    other?.();
  });

  it('refuses a cap that is not a positive whole number', () => {
    expect(() => new PerSourceLimit(0)).toThrow(/not a count/);
    expect(() => new PerSourceLimit(1.5)).toThrow(/not a count/);
  });
});
