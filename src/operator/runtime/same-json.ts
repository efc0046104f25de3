/**
 * Deep equality of JSON values, ignoring key order and undefined members: how a status, a Secret
 * or a server resource is compared with what it should be, so only a real difference is written.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/** JSON with sorted keys: equal values give equal text whatever order they were built in. */
export function canonicalJson(value: unknown): string {
  return (
    JSON.stringify(value, (_key, inner: unknown) => {
      if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return inner;
      return Object.fromEntries(
        Object.entries(inner as Record<string, unknown>).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)),
      );
    }) ?? 'undefined'
  );
}
