import { idTimeMs, newId } from '../../crypto/ids.js';
import { rfc3339 } from '../../lib/rfc3339.js';
import { type EventEnvelope, TEST_EVENT_TYPE } from '../../schemas/event-delivery.js';
import type { PendingDelivery } from './delivery-store.js';
import type { OutboundRecord } from './targets/delivery-target.js';

/** The versioned JSON every destination receives for one event (see `schemas/event-delivery.ts`). */
export function envelopeOf(delivery: PendingDelivery): EventEnvelope {
  const stored = JSON.parse(delivery.payload) as { object?: unknown };
  const object =
    stored.object !== null && typeof stored.object === 'object' && !Array.isArray(stored.object)
      ? (stored.object as Record<string, unknown>)
      : { id: delivery.objectId };
  return {
    id: delivery.deliveryId,
    event_id: delivery.eventId,
    event_type: delivery.type,
    created_at: delivery.createdAt,
    object,
  };
}

export function recordOf(delivery: PendingDelivery): OutboundRecord {
  return {
    deliveryId: delivery.deliveryId,
    partitionKey: delivery.objectId,
    // The event id carries the commit's millisecond; `created_at` only its second.
    timestampMs: idTimeMs(delivery.eventId),
    body: JSON.stringify(envelopeOf(delivery)),
  };
}

/** The verification event `test_event` sends: about the destination itself, never queued. */
export function testEnvelope(object: Record<string, unknown>): EventEnvelope {
  return {
    id: newId('evd'),
    event_id: newId('ev'),
    event_type: TEST_EVENT_TYPE,
    created_at: rfc3339(),
    object,
  };
}
