import { describe, expect, it } from 'vitest';
import { keyWithRequestDigest } from './idempotency-key.js';

describe('keyWithRequestDigest', () => {
  const post = (body: unknown, path = '/edges/tls') =>
    keyWithRequestDigest('uid-1', { method: 'POST', path, body });

  it('is the same for the same request, whatever order its body was built in', () => {
    expect(post({ a: 1, b: { c: [1, 2], d: 'x' } })).toBe(post({ b: { d: 'x', c: [1, 2] }, a: 1 }));
    expect(post({ a: 1 })).toMatch(/^uid-1-[0-9a-f]{24}$/);
  });

  it('differs when anything sent differs: a value, an array order, the path', () => {
    const key = post({ a: 1, list: [1, 2] });
    expect(post({ a: 2, list: [1, 2] })).not.toBe(key);
    expect(post({ a: 1, list: [2, 1] })).not.toBe(key);
    expect(post({ a: 1, list: [1, 2] }, '/edges/tcp')).not.toBe(key);
  });
});
