import type { Http2SecureServer } from 'node:http2';

/**
 * What an HTTPS client may take of the edge: how long it may hold a connection without a complete
 * request, and how many header fields a request may carry. Hostile clients are expected: a client
 * that sends its request head a byte at a time (slowloris) or keeps idle connections open must
 * not hold sockets and memory for minutes.
 */
export interface HttpsClientLimits {
  /**
   * How long the TLS handshake may take, and then how long a request's head may take to arrive
   * whole: from the handshake for a connection's first request, from its first byte for later ones
   * (the idle time before it is the idle timeout's). HTTP/2: how long a new session may go without
   * a request. Default 20 s.
   */
  headerTimeoutMs: number;
  /**
   * How long a request may take to arrive whole, body included, from its first byte. Never counts
   * the response (a long download or a stream of events) nor a WebSocket after its upgrade.
   * Default 300 s, as Node's `requestTimeout`.
   */
  requestTimeoutMs: number;
  /**
   * How long a kept-alive connection may wait for its next request once the last response went out
   * (HTTP/1.1), or a session may stay without an open stream (HTTP/2: GOAWAY, then closed; PINGs
   * do not keep it). Default 75 s, as nginx's `keepalive_timeout`.
   */
  idleTimeoutMs: number;
  /** Header fields a request may carry (pseudo-headers not counted); more are refused 431. Default 100. */
  maxHeaders: number;
}

/**
 * 20 s for a head: a browser sends one in a single packet right after the handshake, and 20 s
 * still covers four TCP retransmissions on a lossy link (1 + 2 + 4 + 8 s), while a slowloris
 * client holds each socket a third of the 60 s of nginx's `client_header_timeout` and Node's
 * `headersTimeout`. 100 header fields, as Apache's `LimitRequestFields`: browsers send about 20.
 */
export const DEFAULT_HTTPS_CLIENT_LIMITS: Readonly<HttpsClientLimits> = {
  headerTimeoutMs: 20_000,
  requestTimeoutMs: 300_000,
  idleTimeoutMs: 75_000,
  maxHeaders: 100,
};

/**
 * Header fields Node parses per request, far above any `maxHeaders`: the size limits bind first
 * (16 KiB of HTTP/1.1 head at 4 bytes a line at least; 64 KiB of HTTP/2 header list at 32 octets
 * of overhead a field), so Node never drops a field unseen (HTTP/1.1) nor resets the stream
 * (HTTP/2) for their number: the edge counts them and answers 431 itself.
 */
export const HEADER_FIELDS_PARSED = 4096;

/** The slowest sweep of Node's HTTP/1.1 timeout check (its default is 30 s, too coarse for 20 s). */
const MAX_CHECK_INTERVAL_MS = 1000;

/**
 * HTTP/1.1 connections of an `allowHTTP1` server: Node's own `headersTimeout`, `requestTimeout`
 * (answered `408`, then closed) and `keepAliveTimeout`. Node sweeps the first two only on servers
 * that emitted 'listening' (that is when its connection tracking starts); the front's servers never
 * listen, they are handed sockets, so the sweep is started the same way here, before any socket.
 */
export function enforceHttp1Limits(server: Http2SecureServer, limits: HttpsClientLimits): void {
  const node = server as Http2SecureServer & {
    headersTimeout: number;
    requestTimeout: number;
    keepAliveTimeout: number;
    connectionsCheckingInterval: number;
    maxHeadersCount: number;
  };
  node.headersTimeout = limits.headerTimeoutMs;
  node.requestTimeout = limits.requestTimeoutMs;
  node.keepAliveTimeout = limits.idleTimeoutMs;
  node.maxHeadersCount = HEADER_FIELDS_PARSED;
  node.connectionsCheckingInterval = Math.max(
    10,
    Math.min(
      MAX_CHECK_INTERVAL_MS,
      Math.floor(Math.min(limits.headerTimeoutMs, limits.requestTimeoutMs) / 4),
    ),
  );
  server.emit('listening');
}

/** The limits given, the defaults for the others. */
export function resolveClientLimits(limits: Partial<HttpsClientLimits> = {}): HttpsClientLimits {
  return { ...DEFAULT_HTTPS_CLIENT_LIMITS, ...limits };
}
