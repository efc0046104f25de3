import { describe, expect, it } from 'vitest';
import { parseForwardTarget } from './forward-target.js';
import { reconnectDelayMs } from './reconnect.js';

describe('parseForwardTarget', () => {
  it.each([
    ['tcp://127.0.0.1:5432', { protocol: 'tcp', host: '127.0.0.1', port: 5432 }],
    ['http://localhost', { protocol: 'http', host: 'localhost', port: 80 }],
    ['tls://db.internal', { protocol: 'tls', host: 'db.internal', port: 443 }],
    ['tcp://[::1]:22', { protocol: 'tcp', host: '::1', port: 22 }],
  ])('%s', (text, target) => {
    expect(parseForwardTarget(text)).toEqual(target);
  });

  it.each([
    ['127.0.0.1:5432', /is not a URL/],
    ['udp://127.0.0.1:53', /protocol must be tcp, tls or http, not udp/],
    ['tcp://127.0.0.1', /tcp:\/\/ needs a port/],
    ['http://127.0.0.1:8080/app', /takes no path/],
  ])('refuses %s', (text, message) => {
    expect(() => parseForwardTarget(text)).toThrow(message);
  });
});

describe('reconnectDelayMs', () => {
  it('grows exponentially to a 30 s cap, with full jitter', () => {
    expect(reconnectDelayMs(0, () => 1)).toBe(250);
    expect(reconnectDelayMs(3, () => 1)).toBe(2000);
    expect(reconnectDelayMs(50, () => 1)).toBe(30_000);
    expect(reconnectDelayMs(5, () => 0)).toBe(0);
    expect(reconnectDelayMs(5, () => 0.5)).toBe(4000);
  });
});
