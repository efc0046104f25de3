import { normalizeIp } from '../routing/ip-policy.js';
import type { Admitted, EdgeReply, IncomingRequest, RequestExchange } from './exchange.js';
import { upstreamRequestHeaders } from './forwarding-headers.js';
import type { HttpsEdgeEntry, HttpsRouteTable } from './https-routes.js';
import { type EdgePage, Pages } from './pages.js';
import { requestHeadProblem } from './request-head.js';
import { normalizeTarget } from './request-target.js';
import { RESERVED_PATH_PREFIXES } from './route-modules.js';

export type Admission =
  | { kind: 'reply'; edgeId: string | undefined; routeId: string | undefined; reply: EdgeReply }
  | ({ kind: 'pass' } & Admitted);

type Render = (
  page: EdgePage,
  edgeId: string | undefined,
) => { headers: Record<string, string>; body: string };

function pageReply(page: EdgePage, edgeId: string | undefined, render: Render): EdgeReply {
  const { headers, body } = render(page, edgeId);
  return { status: page.status, headers, body, outcome: page.code };
}

/** A Host or :authority the edge accepts: a DNS name or an IP literal, with an optional port. */
const AUTHORITY = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** `host[:port]` → lower-case host; IPv6 literals keep their brackets off. */
export function hostOfAuthority(authority: string): string {
  if (authority.startsWith('[')) return authority.slice(1, authority.indexOf(']')).toLowerCase();
  const colon = authority.lastIndexOf(':');
  return (colon === -1 ? authority : authority.slice(0, colon)).toLowerCase();
}

/**
 * Decides what happens to one request: a head the edge cannot serve is refused first (too many
 * header fields, an ambiguous Host), then the edge and route it is for, then every module of that
 * route in the order of `EDGE_ROUTE_MODULES`. The first module that refuses answers; a route whose
 * modules could not be read refuses everything (fail closed).
 */
export async function admit(
  request: IncomingRequest,
  table: HttpsRouteTable,
  render: Render,
  limits: { maxHeaders: number },
): Promise<Admission> {
  const problem = requestHeadProblem(request, limits.maxHeaders);
  if (problem)
    return {
      kind: 'reply',
      edgeId: undefined,
      routeId: undefined,
      reply: pageReply(problem, undefined, render),
    };
  const authority = String(request.headers[':authority'] ?? request.headers.host ?? '');
  const host = hostOfAuthority(authority);
  const reply = (page: EdgePage, edgeId?: string, routeId?: string): Admission => ({
    kind: 'reply',
    edgeId,
    routeId,
    reply: pageReply(page, edgeId, render),
  });
  if (!AUTHORITY.test(authority)) return reply(Pages.badRequest('the Host header is not a host name'));
  const entry = table.edgeFor(host);
  if (!entry) return reply(Pages.noEdge(host));
  const edgeId = entry.edge.id;
  // The TLS handshake (certificate, mutual TLS, minimum version) was that of the SNI's edge: a
  // request for another edge's host on this connection must open its own.
  const sni = request.socket.servername;
  if (typeof sni !== 'string' || table.edgeFor(sni.toLowerCase())?.edge.id !== edgeId) {
    return reply(Pages.misdirected(host), edgeId);
  }
  // Routes are chosen by the normalized path, and that same target is what the service gets.
  const normalized = normalizeTarget(request.target, authority);
  if (!normalized) return reply(Pages.badRequest('the request target is not a plain path'), edgeId);
  const { path, query } = normalized;
  const exchange: RequestExchange = {
    request,
    host,
    href: `https://${authority}${path}${query}`,
    path,
    query,
    clientIp: normalizeIp(request.socket.remoteAddress ?? ''),
    target: `${path}${query}`,
    headers: {},
    body: undefined,
    setCookies: [],
    page: (page) => pageReply(page, edgeId, render),
  };

  const special = await reservedPath(exchange, entry, table);
  if (special) return { kind: 'reply', edgeId, routeId: special.routeId, reply: special.reply };

  const route = table.routeFor(entry, host, path);
  if (!route) return reply(Pages.noRoute(path), edgeId);
  const { modules } = route;
  if (!modules) return reply(Pages.misconfigured(), edgeId, route.id);
  // Built only for a request a route will take: refusals before this point never need them.
  exchange.headers = upstreamRequestHeaders(request.headers, { ip: exchange.clientIp, host: authority });
  const refusal = await modules.onRequest(exchange);
  if (refusal) return { kind: 'reply', edgeId, routeId: route.id, reply: refusal };
  const labels = modules.tunnelGroup;
  if (!labels) return reply(Pages.noBackend(), edgeId, route.id);
  // The exchange itself goes on, admitted: no copy per request.
  return Object.assign(exchange, { kind: 'pass' as const, entry, route, modules, labels });
}

/**
 * The paths modules serve themselves for a route (`<prefix><route id>/…`: OAuth/OIDC callbacks,
 * SAML metadata), behind the route's guards (its IP restriction).
 */
async function reservedPath(
  exchange: RequestExchange,
  entry: HttpsEdgeEntry,
  table: HttpsRouteTable,
): Promise<{ routeId: string; reply: EdgeReply } | undefined> {
  const { path } = exchange;
  const prefix = RESERVED_PATH_PREFIXES.find((candidate) => path.startsWith(candidate));
  if (!prefix) return undefined;
  const routeId = path.slice(prefix.length).split('/')[0] ?? '';
  const modules = table.routeById(entry, routeId)?.modules;
  if (!modules) return undefined;
  const refusal = await modules.guardReservedPath(exchange);
  if (refusal) return { routeId, reply: refusal };
  const server = modules.reservedPathServer(prefix);
  const served = await server?.serveReservedPath?.({
    exchange,
    routeId,
    rest: path.slice(prefix.length + routeId.length),
  });
  return served ? { routeId, reply: served } : undefined;
}
