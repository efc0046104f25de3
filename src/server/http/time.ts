/** RFC 3339 in UTC with a `Z`, second precision, as the API shows timestamps. */
export function rfc3339(date: Date = new Date()): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}
