import { describe, expect, it } from 'vitest';
import { logEventTimestamps } from './cloudwatch-logs.js';
import type { OutboundRecord } from './delivery-target.js';

const at = (timestampMs: number): OutboundRecord => ({
  deliveryId: 'd',
  partitionKey: 'k',
  timestampMs,
  body: '{}',
});
const HOUR = 3600 * 1000;
const now = Date.parse('2026-11-26T12:00:00Z');

describe('logEventTimestamps', () => {
  it('keeps event times that are in order and recent', () => {
    expect(logEventTimestamps([at(now - 3), at(now - 2), at(now - 1)], now)).toEqual([
      now - 3,
      now - 2,
      now - 1,
    ]);
  });

  it('never goes back in time within a call (routing order may differ from event time)', () => {
    expect(logEventTimestamps([at(now - 5), at(now - 9), at(now - 1)], now)).toEqual([
      now - 5,
      now - 5,
      now - 1,
    ]);
  });

  it('spans at most 23 hours, is never older than 13 days, and never in the future', () => {
    const stamps = logEventTimestamps([at(now - 20 * 24 * HOUR), at(now - 30 * HOUR), at(now + HOUR)], now);
    expect(stamps).toEqual([now - 23 * HOUR, now - 23 * HOUR, now]);
  });
});
