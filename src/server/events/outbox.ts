import { newId } from '../../crypto/ids.js';
import { rfc3339 } from '../../lib/rfc3339.js';
import type { Db } from '../store/database.js';

export type EventAction = 'created' | 'updated' | 'deleted';

/** What happened to which kind of resource: the type of an account event. */
export interface AccountEvent {
  /** Singular snake_case resource name, e.g. `ip_policy`. */
  resource: string;
  action: EventAction;
}

/** `<resource>_<action>.v<N>`, the form of every event type; all of ours are version 0. */
export function eventType(event: AccountEvent): string {
  return `${event.resource}_${event.action}.v0`;
}

/** One-time secrets never enter the outbox: they would be delivered to third parties. */
const SECRET_FIELDS = new Set(['token']);

function redact(object: unknown): unknown {
  if (object === null || typeof object !== 'object' || Array.isArray(object)) return object;
  return Object.fromEntries(
    Object.entries(object).map(([key, value]) => [key, SECRET_FIELDS.has(key) ? null : value]),
  );
}

/**
 * Appends an event to the durable outbox inside the caller's transaction, so an event exists if
 * and only if the change it reports was committed. Delivery to destinations reads this table.
 */
export async function recordEvent(
  db: Db,
  event: AccountEvent,
  objectId: string,
  object: unknown,
): Promise<void> {
  const payload = event.action === 'deleted' ? { id: objectId } : redact(object);
  await db
    .insertInto('events')
    .values({
      id: newId('ev'),
      type: eventType(event),
      object_id: objectId,
      created_at: rfc3339(),
      payload: JSON.stringify({ object: payload }),
      routed_at: null,
    })
    .execute();
}
