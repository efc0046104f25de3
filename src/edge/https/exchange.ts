import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { HeaderRecord } from './forwarding-headers.js';
import type { HttpsEdgeEntry, HttpsRoute } from './https-routes.js';
import type { EdgePage } from './pages.js';
import type { RouteModules } from './route-modules.js';

/** What the edge knows of an incoming request, whichever HTTP version carried it. */
export interface IncomingRequest {
  method: string;
  /** The request target: path and query. */
  target: string;
  headers: IncomingHttpHeaders;
  /** The header fields as received, names and values alternating: repeated fields all kept. */
  rawHeaders: readonly string[];
  /** The TLS socket it came on: its SNI and negotiated version. */
  socket: TLSSocket;
  /** The body, read only when a module needs it whole. */
  body: Readable;
  /**
   * Whether a body follows the head, as the edge's own parser framed it (HTTP/1.1: a
   * Transfer-Encoding or a non-zero Content-Length; HTTP/2: the stream did not end with the headers).
   */
  hasBody: boolean;
  /** An HTTP/1.1 upgrade request (WebSocket): a raw pipe follows a `101`. */
  upgrade: boolean;
}

/** A response the edge gives itself, instead of the upstream's. */
export interface EdgeReply {
  status: number;
  headers: Record<string, string | string[]>;
  body: string;
  /** For metrics: which of the edge's own answers this is. */
  outcome: string;
}

/** A request on its way through a route's modules: what they read and what they change. */
export interface RequestExchange {
  readonly request: IncomingRequest;
  /** The request's host name, lower case, without a port. */
  readonly host: string;
  /** The public URL of the request: `https://authority/path?query`. */
  readonly href: string;
  /** The normalized path, as routes are matched on it. */
  readonly path: string;
  /** The query with its `?`, or `''`. */
  readonly query: string;
  readonly clientIp: string;
  /** Path and query sent upstream (a policy may rewrite it). */
  target: string;
  /** Headers sent upstream. */
  headers: HeaderRecord;
  /** The whole body when a module read it (webhook verification). */
  body: Buffer | undefined;
  /** Set-Cookie values to add to the upstream's response (a refreshed auth session). */
  setCookies: string[];
  /** The edge's own page for this route, as a reply. */
  page(page: EdgePage): EdgeReply;
}

/** A request allowed through: where it goes and how it is changed on the way. */
export interface Admitted extends RequestExchange {
  entry: HttpsEdgeEntry;
  route: HttpsRoute;
  modules: RouteModules;
  /** The tunnel group of the route's backend. */
  labels: Readonly<Record<string, string>>;
}

/** The upstream's answer on its way back through a route's modules. */
export interface ResponseExchange {
  readonly admitted: Admitted;
  readonly status: number;
  /** Headers sent to the client. */
  headers: HeaderRecord;
  /** A transform the body is piped through on its way (compression). */
  transform: NodeJS.ReadWriteStream | undefined;
}
