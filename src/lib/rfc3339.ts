/**
 * RFC 3339 in UTC with a `Z`, second precision, as the API shows timestamps. Below every layer that
 * stamps a time (store, crypto, events, http), so none of them reaches up for it.
 */
export function rfc3339(date: Date = new Date()): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}
