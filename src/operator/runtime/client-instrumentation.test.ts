import { describe, expect, it } from 'vitest';
import { instrumentedClientOptions } from './client-instrumentation.js';
import { OperatorMetrics } from './metrics.js';
import { RateLimiter } from './rate-limiter.js';

describe('instrumentedClientOptions', () => {
  it('waits for the limiter, counts responses, pauses on 429, and keeps the caller hooks', async () => {
    let now = 0;
    const limiter = new RateLimiter({ qps: 10, burst: 1, now: () => now });
    const metrics = new OperatorMetrics({ processMetrics: false });
    const seen: string[] = [];
    const options = instrumentedClientOptions(
      {
        baseUrl: 'http://127.0.0.1:1',
        apiKey: 'key',
        beforeRequest: async (info) => {
          seen.push(`before ${info.method}`);
        },
        onResponse: (info) => seen.push(`after ${info.statusCode}`),
      },
      { limiter, metrics, defaultPauseMs: 2000 },
    );
    expect(options.baseUrl).toBe('http://127.0.0.1:1');
    await options.beforeRequest?.({ method: 'GET', path: '/credentials' });
    expect(limiter.tokens).toBe(0);
    options.onResponse?.({ method: 'GET', path: '/credentials', statusCode: 200, attempt: 1 });
    options.onResponse?.({ method: 'POST', path: '/credentials', statusCode: 429, attempt: 1 });
    expect(seen).toEqual(['before GET', 'after 200', 'after 429']);
    expect(limiter.pausedUntil).toBe(2000);
    expect(limiter.reserve()).toBeGreaterThanOrEqual(2000);
    // A Retry-After the client reports wins over the default.
    now = 10;
    const withRetryAfter = options.onResponse as (info: object) => void;
    withRetryAfter({ method: 'GET', path: '/x', statusCode: 429, attempt: 2, retryAfterMs: 7000 });
    expect(limiter.pausedUntil).toBe(7010);
    const text = await metrics.text();
    expect(text).toContain('edgeward_operator_api_requests_total{api="edgeward",method="GET",code="200"} 1');
    expect(text).toContain('edgeward_operator_api_requests_total{api="edgeward",method="POST",code="429"} 1');
  });
});
