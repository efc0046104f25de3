import { describe, expect, it } from 'vitest';
import { returnUrlFor } from './flow-state.js';

describe('the return URL kept in the flow cookie', () => {
  it('is the request URL, shortened first by its query and then to the origin', () => {
    expect(returnUrlFor(new URL('https://a.example/p?q=1'))).toBe('https://a.example/p?q=1');
    const longQuery = new URL(`https://a.example/p?q=${'x'.repeat(3000)}`);
    expect(returnUrlFor(longQuery)).toBe('https://a.example/p');
    expect(returnUrlFor(new URL(`https://a.example/${'p'.repeat(3000)}`))).toBe('https://a.example/');
  });
});
