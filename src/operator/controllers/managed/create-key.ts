import { createHash } from 'node:crypto';
import type { ManagedObject } from './managed-resource.js';

/**
 * The Idempotency-Key of a create: the object's uid and a digest of everything the create's body
 * is built from (the spec and the resolved references and Secret values). A retry with the same
 * inputs replays the first create; a changed input (a new spec, a referenced policy replaced, a
 * rotated Secret) makes a new create instead of the server's 409 for a key reused with another
 * body. `replacesId`: a recreate (the old one deleted on the server) or a replacement must not
 * replay the answer that made the old one.
 */
export function createKeyOf(object: ManagedObject, resolved: unknown, replacesId?: string): string {
  const digest = createHash('sha256')
    .update(canonicalJson({ spec: object.spec, resolved }))
    .digest('hex')
    // 96 bits: collisions between one object's inputs are out of reach; the key stays short.
    .slice(0, 24);
  const key = `${object.metadata?.uid}-${digest}`;
  return replacesId ? `${key}-replaces-${replacesId}` : key;
}

/**
 * JSON with sorted keys, and Maps as sorted entries (Secret values are a Map): equal inputs give
 * equal text whatever order they were built in, and no input is silently dropped as `{}`.
 */
export function canonicalJson(value: unknown): string {
  return (
    JSON.stringify(value, (_key, inner: unknown) => {
      if (inner instanceof Map) {
        return { $map: [...inner.entries()].sort(([x], [y]) => (String(x) < String(y) ? -1 : 1)) };
      }
      if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return inner;
      return Object.fromEntries(
        Object.entries(inner as Record<string, unknown>).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)),
      );
    }) ?? 'undefined'
  );
}
