import { expect } from 'vitest';
import type { EventDeliveryStatus } from '../../src/schemas/event-delivery.js';
import type { TestServer } from './server.js';

/** The event delivery suites' API steps, over raw HTTP like every server test. */

export async function createDestination(t: TestServer, target: Record<string, unknown>): Promise<string> {
  const created = await t.api('POST', '/event_destinations', { target });
  expect(created.status, created.text).toBe(201);
  return created.body.id as string;
}

export async function subscribe(t: TestServer, types: string[], destinationIds: string[]): Promise<string> {
  const created = await t.api('POST', '/event_subscriptions', {
    sources: types.map((type) => ({ type })),
    destination_ids: destinationIds,
  });
  expect(created.status, created.text).toBe(201);
  return created.body.id as string;
}

export async function deliveryStatus(t: TestServer, destinationId: string): Promise<EventDeliveryStatus> {
  const response = await t.api<EventDeliveryStatus>(
    'GET',
    `/event_destinations/${destinationId}/delivery_status`,
  );
  expect(response.status, response.text).toBe(200);
  return response.body;
}

/** The destination's deliveries in routing order: the order it must receive them. */
export async function routedEventIds(t: TestServer, destinationId: string): Promise<string[]> {
  const rows = await t.server.app.edgeward.db
    .selectFrom('event_deliveries')
    .select('event_id')
    .where('destination_id', '=', destinationId)
    .orderBy('seq')
    .execute();
  return rows.map((row) => row.event_id);
}
