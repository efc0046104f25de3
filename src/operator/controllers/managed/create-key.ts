import type { ManagedObject } from './managed-resource.js';

/**
 * The Idempotency-Key a create is given: the object's uid, and for a recreate (the old one deleted
 * on the server) or a replacement the id it replaces, so that the answer that made the old one is
 * not replayed. The operator's client appends a digest of each request (runtime/idempotency-key.ts):
 * a retry of the same create replays it, a create whose body changed is a new one.
 */
export function createKeyOf(object: ManagedObject, replacesId?: string): string {
  const key = `${object.metadata?.uid}`;
  return replacesId ? `${key}-replaces-${replacesId}` : key;
}
