import type { IncomingRequest } from './exchange.js';
import { type EdgePage, Pages } from './pages.js';

/**
 * What makes a request head unservable before it is routed: more header fields than the edge
 * takes (431: Node keeps them all, so none is dropped unseen), and a Host that does not name one
 * host. Node keeps only the first of two `Host` headers, so they are counted on the raw fields: a
 * second one would otherwise be dropped silently and another server on the way could pick it
 * (RFC 9112 §3.2: more than one Host is a 400). An HTTP/2 request may carry `host` beside
 * `:authority` only with the same value (RFC 9113 §8.3.1).
 */
export function requestHeadProblem(request: IncomingRequest, maxHeaders: number): EdgePage | undefined {
  let fields = 0;
  let hosts = 0;
  for (let index = 0; index < request.rawHeaders.length; index += 2) {
    const name = (request.rawHeaders[index] ?? '').toLowerCase();
    if (name.startsWith(':')) continue;
    fields++;
    if (name === 'host') hosts++;
  }
  if (fields > maxHeaders) return Pages.tooManyHeaders(maxHeaders);
  if (hosts > 1) return Pages.badRequest('the request has more than one Host header');
  const authority = request.headers[':authority'];
  const host = request.headers.host;
  if (
    authority !== undefined &&
    host !== undefined &&
    String(authority).toLowerCase() !== String(host).toLowerCase()
  ) {
    return Pages.badRequest('its :authority and Host name different hosts');
  }
  return undefined;
}
