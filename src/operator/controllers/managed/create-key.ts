import type { ManagedObject } from './managed-resource.js';

/**
 * The Idempotency-Key a create is given: the object's uid, and for a recreate (the old one deleted
 * on the server) or a replacement the id it replaces, so that the answer that made the old one is
 * not replayed. A retry of the same create replays it; one whose body changed is refused with the
 * id of what the key made (apply.ts tracks it), so a lost answer never leaves a second resource.
 */
export function createKeyOf(object: ManagedObject, replacesId?: string): string {
  const key = `${object.metadata?.uid}`;
  return replacesId ? `${key}-replaces-${replacesId}` : key;
}
