import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { normalizeIp } from '../routing/ip-policy.js';
import { type HeaderRecord, upstreamRequestHeaders } from './forwarding-headers.js';
import type { HttpsEdgeEntry, HttpsRoute, HttpsRouteTable } from './https-routes.js';
import { AUTH_PATH_PREFIX } from './modules/auth/index.js';
import { MAX_WEBHOOK_BODY_BYTES } from './modules/webhook-verification/index.js';
import { type EdgePage, Pages, renderPage } from './pages.js';
import { normalizeTarget } from './request-target.js';
import type { RouteModules } from './route-modules.js';
import { SAML_PATH_PREFIX, samlMetadata } from './saml-metadata.js';

/** What the edge knows of an incoming request, whichever HTTP version carried it. */
export interface IncomingRequest {
  method: string;
  /** The request target: path and query. */
  target: string;
  headers: IncomingHttpHeaders;
  /** The TLS socket it came on: its SNI and negotiated version. */
  socket: TLSSocket;
  /** The body, read only when a module needs it whole. */
  body: Readable;
  /**
   * Whether a body follows the head, as the edge's own parser framed it (HTTP/1.1: a
   * Transfer-Encoding or a non-zero Content-Length; HTTP/2: the stream did not end with the headers).
   */
  hasBody: boolean;
}

/** A response the edge gives itself, instead of the upstream's. */
export interface EdgeReply {
  status: number;
  headers: Record<string, string | string[]>;
  body: string;
  /** For metrics: which of the edge's own answers this is. */
  outcome: string;
}

/** A request allowed through: where it goes and how it is changed on the way. */
export interface Admitted {
  entry: HttpsEdgeEntry;
  route: HttpsRoute;
  modules: RouteModules;
  labels: Record<string, string>;
  /** Path and query sent upstream (a policy may rewrite it). */
  target: string;
  headers: HeaderRecord;
  /** The whole body when a module read it (webhook verification). */
  body: Buffer | undefined;
  /** Set-Cookie values to add to the upstream's response (a refreshed auth session). */
  setCookies: string[];
  /** The public URL parts the outbound policy sees. */
  host: string;
  clientIp: string;
}

export type Admission =
  | { kind: 'reply'; edgeId: string | undefined; routeId: string | undefined; reply: EdgeReply }
  | ({ kind: 'pass' } & Admitted);

function pageReply(
  page: EdgePage,
  render: (page: EdgePage) => { headers: Record<string, string>; body: string },
): EdgeReply {
  const { headers, body } = render(page);
  return { status: page.status, headers, body, outcome: page.code };
}

/** A Host or :authority the edge accepts: a DNS name or an IP literal, with an optional port. */
const AUTHORITY = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

function pageOnly(
  page: EdgePage,
  render: (page: EdgePage, edgeId: string | undefined) => { headers: Record<string, string>; body: string },
): Admission {
  return {
    kind: 'reply',
    edgeId: undefined,
    routeId: undefined,
    reply: pageReply(page, (p) => render(p, undefined)),
  };
}

/** `host[:port]` → lower-case host; IPv6 literals keep their brackets off. */
export function hostOfAuthority(authority: string): string {
  if (authority.startsWith('[')) return authority.slice(1, authority.indexOf(']')).toLowerCase();
  const colon = authority.lastIndexOf(':');
  return (colon === -1 ? authority : authority.slice(0, colon)).toLowerCase();
}

async function readBody(body: Readable, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > limit) return undefined;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

const TLS_VERSION_NAMES: Record<string, string> = {
  TLSv1: '1.0',
  'TLSv1.1': '1.1',
  'TLSv1.2': '1.2',
  'TLSv1.3': '1.3',
};

/**
 * Decides what happens to one request: the edge and route it is for, then every module of that
 * route in turn (IP restriction, user agent filter, traffic policy, OAuth/OIDC sign-in, webhook
 * signature, circuit breaker, request headers). The first module that refuses answers; a route
 * whose modules could not be read refuses everything (fail closed).
 */
export async function admit(
  request: IncomingRequest,
  table: HttpsRouteTable,
  render: (page: EdgePage, edgeId: string | undefined) => { headers: Record<string, string>; body: string },
): Promise<Admission> {
  const authority = String(request.headers[':authority'] ?? request.headers.host ?? '');
  const host = hostOfAuthority(authority);
  if (!AUTHORITY.test(authority))
    return pageOnly(Pages.badRequest('the Host header is not a host name'), render);
  const reply = (page: EdgePage, edgeId?: string, routeId?: string): Admission => ({
    kind: 'reply',
    edgeId,
    routeId,
    reply: pageReply(page, (p) => render(p, edgeId)),
  });
  const entry = table.edgeFor(host);
  if (!entry) return reply(Pages.noEdge(host));
  const edgeId = entry.edge.id;
  // The TLS handshake (certificate, mutual TLS, minimum version) was that of the SNI's edge: a
  // request for another edge's host on this connection must open its own.
  const sni = request.socket.servername;
  if (typeof sni !== 'string' || table.edgeFor(sni.toLowerCase())?.edge.id !== edgeId) {
    return reply(Pages.misdirected(host), edgeId);
  }
  const clientIp = normalizeIp(request.socket.remoteAddress ?? '');
  // Routes are chosen by the normalized path, and that same target is what the service gets.
  const normalized = normalizeTarget(request.target, authority);
  if (!normalized) return reply(Pages.badRequest('the request target is not a plain path'), edgeId);
  const { path } = normalized;
  const origin = `https://${authority}`;
  const href = `${origin}${path}${normalized.query}`;

  const special = await reservedPath(path, entry, table, request, href, clientIp);
  if (special) return { kind: 'reply', edgeId, routeId: special.routeId, reply: special.reply };

  const route = table.routeFor(entry, host, path);
  if (!route) return reply(Pages.noRoute(path), edgeId);
  const { modules } = route;
  if (!modules) return reply(Pages.misconfigured(), edgeId, route.id);
  const refuse = (page: EdgePage) => reply(page, edgeId, route.id);

  if (modules.ipRestriction && !modules.ipRestriction.allows(clientIp)) return refuse(Pages.ipDenied());
  // Fail closed: a route that requires SAML sign-in is never served unauthenticated.
  if (modules.saml) return refuse(Pages.samlNotBuilt());
  if (modules.userAgentFilter) {
    const userAgent = request.headers['user-agent'];
    if (!modules.userAgentFilter(userAgent)) return refuse(Pages.userAgentDenied());
  }

  let headers = upstreamRequestHeaders(request.headers, { ip: clientIp, host: authority });
  let target = `${path}${normalized.query}`;
  if (modules.policy) {
    const tlsVersion = TLS_VERSION_NAMES[request.socket.getProtocol() ?? ''];
    const outcome = modules.policy.inbound({
      method: request.method,
      url: href,
      path,
      query: normalized.query.slice(1),
      host,
      headers: request.headers,
      clientIp,
      clientPort: request.socket.remotePort ?? 0,
      ...(tlsVersion && { tlsVersion }),
    });
    if (outcome.respond) {
      return {
        kind: 'reply',
        edgeId,
        routeId: route.id,
        reply: { ...outcome.respond, outcome: 'policy' },
      };
    }
    for (const name of outcome.removeHeaders) delete headers[name];
    headers = { ...headers, ...outcome.setHeaders };
    if (outcome.rewrittenPath) target = outcome.rewrittenPath;
  }

  const setCookies: string[] = [];
  if (modules.auth) {
    const verdict = await modules.auth.handle({
      method: request.method,
      url: href,
      headers: request.headers,
    });
    if (verdict.kind === 'respond') {
      return {
        kind: 'reply',
        edgeId,
        routeId: route.id,
        reply: { status: verdict.status, headers: verdict.headers, body: verdict.body, outcome: 'auth' },
      };
    }
    setCookies.push(...verdict.setCookies);
    if (verdict.identity) {
      headers['edgeward-auth-user-id'] = headerSafe(verdict.identity.subject);
      if (verdict.identity.email) headers['edgeward-auth-user-email'] = headerSafe(verdict.identity.email);
      if (verdict.identity.name) headers['edgeward-auth-user-name'] = headerSafe(verdict.identity.name);
    }
  }

  let body: Buffer | undefined;
  if (modules.webhookVerification) {
    body = await readBody(request.body, MAX_WEBHOOK_BODY_BYTES);
    if (!body) return refuse(Pages.tooLarge(MAX_WEBHOOK_BODY_BYTES));
    const verdict = await modules.webhookVerification({
      method: request.method,
      url: href,
      headers: request.headers,
      body,
    });
    if (!verdict.ok) {
      const refusal = reply(Pages.webhookRefused(), edgeId, route.id);
      if (refusal.kind === 'reply')
        refusal.reply.headers['edgeward-webhook-refusal'] = headerSafe(verdict.reason);
      return refusal;
    }
    headers['content-length'] = String(body.length);
    delete headers['transfer-encoding'];
  }

  if (modules.circuitBreaker && !modules.circuitBreaker.allow()) return refuse(Pages.circuitOpen());
  if (modules.requestHeaders) headers = modules.requestHeaders.apply(headers);
  if (!modules.backendLabels) return refuse(Pages.noBackend());

  return {
    kind: 'pass',
    entry,
    route,
    modules,
    labels: modules.backendLabels,
    target,
    headers,
    body,
    setCookies,
    host,
    clientIp,
  };
}

/** The paths the edge serves itself for a route: OAuth/OIDC callbacks and SAML metadata. */
async function reservedPath(
  path: string,
  entry: HttpsEdgeEntry,
  table: HttpsRouteTable,
  request: IncomingRequest,
  href: string,
  clientIp: string,
): Promise<{ routeId: string; reply: EdgeReply } | undefined> {
  const prefix = path.startsWith(AUTH_PATH_PREFIX)
    ? AUTH_PATH_PREFIX
    : path.startsWith(SAML_PATH_PREFIX)
      ? SAML_PATH_PREFIX
      : undefined;
  if (!prefix) return undefined;
  const routeId = path.slice(prefix.length).split('/')[0] ?? '';
  const route = table.routeById(entry, routeId);
  const modules = route?.modules;
  // The route's IP restriction guards its sign-in and metadata endpoints too.
  if (modules?.ipRestriction && !modules.ipRestriction.allows(clientIp)) {
    return { routeId, reply: { ...pageReply(Pages.ipDenied(), (page) => renderPage(page, entry.edge.id)) } };
  }
  if (prefix === AUTH_PATH_PREFIX && modules?.auth) {
    const verdict = await modules.auth.handle({
      method: request.method,
      url: href,
      headers: request.headers,
    });
    if (verdict.kind === 'respond') {
      return {
        routeId,
        reply: { status: verdict.status, headers: verdict.headers, body: verdict.body, outcome: 'auth' },
      };
    }
    return undefined;
  }
  if (prefix === SAML_PATH_PREFIX && modules?.saml) {
    const served = samlMetadata(
      path.slice(prefix.length + routeId.length),
      routeId,
      modules.saml,
      href.slice(0, href.indexOf('/', 'https://'.length)),
    );
    return { routeId, reply: { ...served, outcome: 'saml' } };
  }
  return undefined;
}

/** Header values must be Latin-1 without control characters: anything else is percent-encoded. */
function headerSafe(value: string): string {
  return /^[\x20-\x7e\x80-\xff]*$/.test(value) ? value : encodeURIComponent(value);
}
