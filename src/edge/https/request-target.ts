/**
 * The request target as the edge routes it and sends it upstream: one normalized form, so the path
 * a route was chosen by is the path the service gets (a service that decodes `%61dmin`, merges
 * `//` or resolves `..` must not reach what the route's modules guard).
 */
export interface RequestTarget {
  /** Normalized path: starts with `/`, no empty, `.` or `..` segments, unreserved escapes decoded. */
  path: string;
  /** The query as received, with its `?`, or the empty string. */
  query: string;
}

/** Percent-escapes of unreserved characters (RFC 3986 §2.3), which mean the character itself. */
const UNRESERVED_ESCAPE = /%(4[1-9A-F]|5[0-9A]|6[1-9A-F]|7[0-9A]|3[0-9]|2D|2E|5F|7E)/gi;

/**
 * Origin-form targets only (`/path?query`; absolute-form when its authority is the request's own).
 * Refused (undefined): anything else, escaped `/` or `\`, a backslash, `;` (path parameters, plain
 * or escaped), NUL. Dot segments are resolved (`/a/../b` is `/b`), repeated slashes merged.
 */
export function normalizeTarget(raw: string, authority: string): RequestTarget | undefined {
  let target = raw;
  const absolute = /^https?:\/\/([^/?#]*)/i.exec(target);
  if (absolute) {
    if (absolute[1]?.toLowerCase() !== authority.toLowerCase()) return undefined;
    target = target.slice(absolute[0].length) || '/';
  }
  if (!target.startsWith('/')) return undefined;
  const queryAt = target.indexOf('?');
  const rawPath = queryAt === -1 ? target : target.slice(0, queryAt);
  const query = queryAt === -1 ? '' : target.slice(queryAt);
  // `;` starts path parameters some servers strip (`/;x/admin` is `/admin` to a servlet container,
  // `..;` is `..`): refused outright, so no parameter can move a request past its route.
  if (/%(2f|5c|00|3b)|[\\;]/i.test(rawPath)) return undefined;
  const decoded = rawPath.replace(UNRESERVED_ESCAPE, (_, hex: string) =>
    String.fromCharCode(Number.parseInt(hex, 16)),
  );
  const segments: string[] = [];
  const parts = decoded.split('/').slice(1);
  for (const [index, segment] of parts.entries()) {
    if (segment === '..') segments.pop();
    else if (segment !== '.' && (segment !== '' || index === parts.length - 1)) segments.push(segment);
  }
  return { path: `/${segments.join('/')}`, query };
}
