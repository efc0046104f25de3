import { describe, expect, it } from 'vitest';
import { compilePolicy } from './compile.js';
import { SlidingWindowLimiter } from './rate-limiter.js';
import type { PolicyRequest } from './types.js';

describe('SlidingWindowLimiter', () => {
  it('admits capacity requests per window and says when the next one fits', () => {
    const limiter = new SlidingWindowLimiter(3, 10_000);
    for (let i = 0; i < 3; i++) expect(limiter.take('k', 0)).toEqual({ allowed: true });
    // This window is full; in the next one its 3 requests fade out over the window.
    expect(limiter.take('k', 1_000)).toEqual({ allowed: false, retryAfterMs: Math.ceil(9_000 + 10_000 / 3) });
    expect(limiter.take('k', 1_000 + 12_333).allowed).toBe(false);
    expect(limiter.take('k', 1_000 + 12_334).allowed).toBe(true);
    expect(limiter.take('other', 1_000)).toEqual({ allowed: true });
  });

  it('weighs the previous window by how much of it still overlaps', () => {
    const limiter = new SlidingWindowLimiter(10, 10_000);
    for (let i = 0; i < 10; i++) expect(limiter.take('k', 5_000).allowed).toBe(true);
    // At 12s the previous window weighs 80%: 8 requests, so two more fit.
    expect(limiter.take('k', 12_000).allowed).toBe(true);
    expect(limiter.take('k', 12_000).allowed).toBe(true);
    const refused = limiter.take('k', 12_000);
    expect(refused.allowed).toBe(false);
    // 10 * (1 - t/10s) + 2 + 1 <= 10 from t = 3s: one second after 12s.
    expect(refused).toEqual({ allowed: false, retryAfterMs: 1_000 });
    expect(limiter.take('k', 13_000).allowed).toBe(true);
  });

  it('forgets keys two windows old', () => {
    const limiter = new SlidingWindowLimiter(1, 1_000);
    limiter.take('a', 0);
    limiter.take('b', 500);
    expect(limiter.size).toBe(2);
    limiter.take('c', 2_100);
    expect(limiter.size).toBe(1);
  });
});

const REQUEST: PolicyRequest = {
  method: 'GET',
  url: 'https://app.example.com/',
  path: '/',
  query: '',
  host: 'app.example.com',
  headers: { 'x-api-key': 'k1' },
  clientIp: '192.0.2.1',
  clientPort: 40000,
};

function limited(bucketKey: string[], now: () => number, onError?: (error: Error) => void) {
  return compilePolicy(
    {
      inbound: [
        {
          name: 'limit',
          actions: [
            {
              type: 'rate-limit',
              config: {
                name: 'per-client',
                algorithm: 'sliding_window',
                capacity: 2,
                rate: '60s',
                bucket_key: bucketKey,
              },
            },
            { type: 'add-headers', config: { headers: { 'x-counted': 'yes' } } },
          ],
        },
      ],
    },
    { phase: 'http', now, onError },
  );
}

describe('rate-limit action', () => {
  it('answers 429 with Retry-After over the limit, per bucket, until the window slides on', () => {
    let now = 120_000;
    const policy = limited(['conn.client_ip'], () => now);
    expect(policy.inbound(REQUEST).respond).toBeUndefined();
    expect(policy.inbound(REQUEST).setHeaders).toEqual({ 'x-counted': 'yes' });
    const refused = policy.inbound(REQUEST);
    // Refused: the rule's later actions do not run. Full window: 60s to its end, then 30s of fading.
    expect(refused).toEqual({
      respond: { status: 429, headers: { 'retry-after': '90' }, body: '' },
      setHeaders: {},
      removeHeaders: [],
    });
    expect(policy.inbound({ ...REQUEST, clientIp: '192.0.2.2' }).respond).toBeUndefined();
    now += 90_000;
    expect(policy.inbound(REQUEST).respond).toBeUndefined();
  });

  it('keys buckets by every bucket_key value', () => {
    const policy = limited(['conn.client_ip', "req.headers[?'x-api-key'].orValue(['none'])[0]"], () => 0);
    policy.inbound(REQUEST);
    policy.inbound(REQUEST);
    expect(policy.inbound(REQUEST).respond?.status).toBe(429);
    expect(policy.inbound({ ...REQUEST, headers: { 'x-api-key': 'k2' } }).respond).toBeUndefined();
    expect(policy.inbound({ ...REQUEST, headers: {} }).respond).toBeUndefined();
  });

  it('keeps its counters in the compiled policy: a new compile starts afresh', () => {
    const first = limited(['conn.client_ip'], () => 0);
    for (let i = 0; i < 2; i++) first.inbound(REQUEST);
    expect(first.inbound(REQUEST).respond?.status).toBe(429);
    expect(limited(['conn.client_ip'], () => 0).inbound(REQUEST).respond).toBeUndefined();
  });

  it('lets a request through uncounted when its bucket key fails, and reports it', () => {
    const errors: Error[] = [];
    const policy = limited(
      ["req.headers['x-missing'][0]"],
      () => 0,
      (error) => errors.push(error),
    );
    for (let i = 0; i < 5; i++) expect(policy.inbound(REQUEST).respond).toBeUndefined();
    expect(errors).toHaveLength(5);
    expect(errors[0]?.message).toMatch(
      /^inbound\[0\]\.actions\[0\]\.config\.bucket_key\[0\] \(rule 'limit'\): the bucket key failed to evaluate/,
    );
  });
});
