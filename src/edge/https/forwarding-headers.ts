import type { IncomingHttpHeaders } from 'node:http';

export type HeaderRecord = Record<string, string | string[] | undefined>;

/** Hop-by-hop headers (RFC 9110 §7.6.1 and the older ones proxies still see): never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
]);

/** What the edge tells the upstream about who asked; a client's own values are never trusted for these. */
export const IDENTITY_HEADERS = [
  'edgeward-auth-user-id',
  'edgeward-auth-user-email',
  'edgeward-auth-user-name',
];

/** Never dropped because `Connection` names them: the message's framing and target depend on them. */
const FRAMING = new Set(['content-length', 'host']);

/** Headers minus the hop-by-hop ones, those `Connection` names, and HTTP/2 pseudo-headers. */
export function endToEnd(headers: IncomingHttpHeaders | HeaderRecord): HeaderRecord {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((token) => token.trim().toLowerCase())
      .filter((token) => token !== '' && !FRAMING.has(token)),
  );
  const result: HeaderRecord = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name.startsWith(':')) continue;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || named.has(lower)) continue;
    result[lower] = value;
  }
  return result;
}

/** An RFC 7239 node: IPv6 addresses quoted in brackets. */
function forwardedNode(ip: string): string {
  return ip.includes(':') ? `"[${ip}]"` : ip;
}

/** The request headers sent upstream: end-to-end ones, `host` kept, X-Forwarded-* added. */
export function upstreamRequestHeaders(
  headers: IncomingHttpHeaders,
  client: { ip: string; host: string },
): HeaderRecord {
  const result = endToEnd(headers);
  for (const name of IDENTITY_HEADERS) delete result[name];
  // HTTP/2 clients send :authority instead of Host; the upstream speaks HTTP/1.1.
  result.host = client.host;
  const prior = headers['x-forwarded-for'];
  const chain = Array.isArray(prior) ? prior.join(', ') : prior;
  result['x-forwarded-for'] = chain ? `${chain}, ${client.ip}` : client.ip;
  result['x-forwarded-proto'] = 'https';
  result['x-forwarded-host'] = client.host;
  // RFC 7239 likewise: a client's own elements are kept, the edge's is the last one.
  const forwarded = headers.forwarded;
  const element = `for=${forwardedNode(client.ip)};host="${client.host}";proto=https`;
  result.forwarded = forwarded
    ? `${Array.isArray(forwarded) ? forwarded.join(', ') : forwarded}, ${element}`
    : element;
  // HTTP/2 may split cookies into several fields; HTTP/1.1 wants one (RFC 9113 §8.2.3).
  if (Array.isArray(result.cookie)) result.cookie = result.cookie.join('; ');
  return result;
}

/** Header values must be Latin-1 without control characters: anything else is percent-encoded. */
export function headerSafe(value: string): string {
  return /^[\x20-\x7e\x80-\xff]*$/.test(value) ? value : encodeURIComponent(value);
}
