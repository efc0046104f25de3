import { describe, expect, it } from 'vitest';
import { fakeEdgewardClient } from '../../../../test/support/fake/edgeward-client.js';
import type { EventDeliveryStatus } from '../../../schemas/event-delivery.js';
import { DELIVERING, deliveringCondition, deliveryConditions, FAILING_RECHECK_MS } from './delivering.js';

const base: EventDeliveryStatus = {
  uri: 'https://edgeward.test/event_destinations/ed_1/delivery_status',
  destination_id: 'ed_1',
  state: 'idle',
  backlog: 0,
  oldest_pending_at: null,
  undeliverable: 0,
  delivered: 0,
  last_success_at: null,
  last_error: null,
  consecutive_failures: 0,
  next_attempt_at: null,
};

const failing = (message: string, failures: number, at: string): EventDeliveryStatus => ({
  ...base,
  state: 'failing',
  backlog: failures * 3,
  oldest_pending_at: at,
  last_error: { message, at },
  consecutive_failures: failures,
  next_attempt_at: at,
});

describe('the Delivering condition', () => {
  it('maps delivering, failing and idle to True, False and Unknown', () => {
    expect(deliveringCondition({ ...base, state: 'delivering' })).toEqual({
      type: DELIVERING,
      status: 'True',
      reason: 'Delivering',
      message: 'the last delivery succeeded',
    });
    expect(deliveringCondition(failing('Datadog answered 503: busy', 1, '2025-01-01T00:00:00Z'))).toEqual({
      type: DELIVERING,
      status: 'False',
      reason: 'DeliveryFailing',
      message: 'Datadog answered 503: busy',
    });
    expect(deliveringCondition(base)).toMatchObject({ status: 'Unknown', reason: 'NoEventsYet' });
  });

  it('is the same for the same state whatever the counts and times, so no status is rewritten', () => {
    const first = failing('Datadog answered 503', 1, '2025-01-01T00:00:00Z');
    const later = failing('Datadog answered 503', 7, '2025-01-01T00:09:30Z');
    expect(deliveringCondition(later)).toEqual(deliveringCondition(first));
    const delivered: EventDeliveryStatus = {
      ...base,
      state: 'delivering',
      delivered: 1,
      last_success_at: '2025-01-01T00:00:00Z',
    };
    const more: EventDeliveryStatus = { ...delivered, delivered: 900, backlog: 12 };
    expect(deliveringCondition(more)).toEqual(deliveringCondition(delivered));
  });

  it('says a failure on one bounded line', () => {
    const page = `Datadog answered 502: <html>\n  <body>${'x'.repeat(1000)}</body>\n</html>`;
    const { message } = deliveringCondition(failing(page, 1, '2025-01-01T00:00:00Z'));
    expect(message).toMatch(/^Datadog answered 502: <html> <body>x+…$/);
    expect(message).toHaveLength(256);
    expect(deliveringCondition({ state: 'failing', last_error: null }).message).toBe(
      'the last delivery failed',
    );
  });

  it('reads delivery_status, and asks to look again soon only while delivery fails', async () => {
    let status: EventDeliveryStatus = base;
    const paths: string[] = [];
    const api = fakeEdgewardClient(({ method, path }) => {
      paths.push(`${method} ${path}`);
      return { status: 200, body: status };
    });
    expect(await deliveryConditions(api, 'ed_1')).toEqual({ conditions: [deliveringCondition(base)] });
    expect(paths).toEqual(['GET /event_destinations/ed_1/delivery_status']);
    status = failing('Datadog answered 503', 2, '2025-01-01T00:00:00Z');
    expect(await deliveryConditions(api, 'ed_1')).toEqual({
      conditions: [deliveringCondition(status)],
      requeueAfterMs: FAILING_RECHECK_MS,
    });
    status = { ...base, state: 'delivering' };
    expect((await deliveryConditions(api, 'ed_1')).requeueAfterMs).toBeUndefined();
    await api.close();
  });
});
