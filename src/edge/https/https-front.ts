import { createHash } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2, {
  type Http2SecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import type net from 'node:net';
import { type Duplex, pipeline, type Readable } from 'node:stream';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { InFlight } from '../../lib/in-flight.js';
import type { Certificate } from '../edge-certificates.js';
import type { EdgeMetrics } from '../edge-metrics.js';
import type { TlsVersion } from '../listeners/tls-listener.js';
import { NoOnlineSession, type SessionPool } from '../routing/session-pool.js';
import {
  enforceHttp1Limits,
  HEADER_FIELDS_PARSED,
  type HttpsClientLimits,
  resolveClientLimits,
} from './client-limits.js';
import type { Admitted, EdgeReply, IncomingRequest, ResponseExchange } from './exchange.js';
import { endToEnd, type HeaderRecord } from './forwarding-headers.js';
import { enforceHttp2Timeouts } from './http2-timeouts.js';
import type { HttpsRouteTable } from './https-routes.js';
import type { UpgradeExchange } from './modules/route-module.js';
import { type EdgePage, Pages, renderPage } from './pages.js';
import { admit } from './request-admission.js';
import { UpstreamAgents, writeBuffersOnly } from './upstream-agents.js';

/** The TLS settings of one HTTPS edge's connections, fixed by the SNI before the handshake. */
export interface HttpsTlsSettings {
  certificate: Certificate;
  minVersion: TlsVersion;
  /** Present = mutual TLS: client certificates must chain to one of these (PEM). */
  clientCas?: string[];
}

const TLS_VERSIONS: Record<TlsVersion, tls.SecureVersion> = {
  '1.0': 'TLSv1',
  '1.1': 'TLSv1.1',
  '1.2': 'TLSv1.2',
  '1.3': 'TLSv1.3',
};
/** Servers kept (one per distinct certificate and TLS settings), least recently used dropped first. */
const MAX_SERVERS = 256;
/** Methods a proxy may send again when a kept-alive connection failed before any answer (RFC 9110 §9.2.2). */
const REPLAYABLE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * One server and the connections it serves. A server dropped from the cache is closed once its last
 * connection is gone: closing stops Node's timeout sweep (whose interval would hold the server in
 * memory for ever), and its connections keep their timeouts until then.
 */
interface FrontServer {
  server: Http2SecureServer;
  connections: number;
  dropped: boolean;
}

type AnyRequest = IncomingMessage | Http2ServerRequest;
type AnyResponse = ServerResponse | Http2ServerResponse;

/** `writeHead` of either protocol's response (their typings' overloads do not unite into one). */
function writeHead(response: AnyResponse, status: number, headers: http.OutgoingHttpHeaders): void {
  if (response instanceof http2.Http2ServerResponse) response.writeHead(status, headers);
  else response.writeHead(status, headers);
}

/**
 * TLS termination and HTTP for HTTPS edges. The TLS listener hands over each connection whose SNI
 * names an HTTPS edge; it is served by a `node:http2` secure server (HTTP/2, and HTTP/1.1 through
 * `allowHTTP1`) made for that edge's certificate and TLS settings, so the handshake enforces the
 * edge's minimum version and mutual TLS before any request is read. Every server shares one
 * request handler: route, modules, then the agent. Every connection is held to the client limits
 * (handshake, header, request and idle timeouts; header fields).
 */
export class HttpsFront {
  readonly #servers = new Map<string, FrontServer>();
  readonly #upstreams: UpstreamAgents;
  readonly #limits: HttpsClientLimits;
  /** Requests being answered now (upgraded connections are not requests: a drain does not wait for them). */
  readonly #inFlight = new InFlight();
  readonly #sessions = new Set<ServerHttp2Session>();
  #draining = false;

  constructor(
    private readonly table: HttpsRouteTable,
    private readonly pool: SessionPool,
    private readonly metrics: EdgeMetrics,
    private readonly log: Logger,
    limits: Partial<HttpsClientLimits> = {},
  ) {
    this.#upstreams = new UpstreamAgents(pool);
    this.#limits = resolveClientLimits(limits);
  }

  /** Keeps the upstream connections of the tunnel groups routes still use; closes the others. */
  retainUpstreams(groups: Iterable<Readonly<Record<string, string>>>): void {
    this.#upstreams.retain(groups);
  }

  /**
   * The edge is draining: HTTP/2 clients get a GOAWAY (their streams in flight finish), HTTP/1.1
   * answers say `Connection: close`. Resolves once no request is in flight.
   */
  drain(): Promise<void> {
    this.#draining = true;
    for (const session of this.#sessions) session.close();
    return this.#inFlight.idle();
  }

  /** Closes every idle upstream connection and stops the servers' timeout checks (the edge is stopping). */
  close(): void {
    this.#upstreams.destroy();
    for (const entry of this.#servers.values()) entry.server.close();
    this.#servers.clear();
  }

  /** Serves one client socket (its ClientHello still unread) with the edge's TLS settings. */
  serve(socket: net.Socket, settings: HttpsTlsSettings): void {
    // The listener accepts half-open sockets (TCP edges need them); HTTPS must not inherit that: the
    // TLS socket takes it from this one, and a client's FIN then left the connection in CLOSE-WAIT
    // until the idle timeout (measured: 775 sockets after 40 s of curl requests through HAProxy).
    socket.allowHalfOpen = false;
    const entry = this.#serverFor(settings);
    entry.connections++;
    socket.once('close', () => {
      entry.connections--;
      if (entry.dropped && entry.connections === 0) entry.server.close();
    });
    entry.server.emit('connection', socket);
  }

  #serverFor(settings: HttpsTlsSettings): FrontServer {
    const key = createHash('sha256')
      .update(
        JSON.stringify([
          settings.certificate.cert,
          settings.certificate.key,
          settings.minVersion,
          settings.clientCas ?? null,
        ]),
      )
      .digest('base64url');
    const cached = this.#servers.get(key);
    if (cached) {
      this.#servers.delete(key);
      this.#servers.set(key, cached);
      return cached;
    }
    const minVersion = TLS_VERSIONS[settings.minVersion];
    const mutual = settings.clientCas !== undefined;
    const server = http2.createSecureServer(
      {
        allowHTTP1: true,
        cert: settings.certificate.cert,
        key: settings.certificate.key,
        minVersion,
        sessionIdContext: key.slice(0, 32),
        ...((minVersion === 'TLSv1' || minVersion === 'TLSv1.1') && {
          ciphers: `${tls.DEFAULT_CIPHERS}:@SECLEVEL=0`,
        }),
        ...(mutual && { requestCert: true, rejectUnauthorized: true, ca: settings.clientCas }),
        settings: { enableConnectProtocol: false },
        handshakeTimeout: this.#limits.headerTimeoutMs,
        maxHeaderListPairs: HEADER_FIELDS_PARSED,
      },
      (request, response) => this.#onRequest(request, response),
    );
    enforceHttp1Limits(server, this.#limits);
    server.on('session', (session) => {
      enforceHttp2Timeouts(session, this.#limits, (stream) => this.#answerRequestTimeout(stream));
      if (this.#draining) session.close();
      this.#sessions.add(session);
      session.once('close', () => this.#sessions.delete(session));
    });
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.#onUpgrade(request, socket, head),
    );
    server.on('tlsClientError', (error, socket) => {
      this.log.info({ ip: socket.remoteAddress, reason: error.message }, 'HTTPS handshake failed');
      socket.destroy();
    });
    // Client resets are ordinary and end their own exchange only.
    server.on('sessionError', () => {});
    const entry: FrontServer = { server, connections: 0, dropped: false };
    this.#servers.set(key, entry);
    if (this.#servers.size > MAX_SERVERS) {
      const oldest = this.#servers.entries().next().value;
      if (oldest !== undefined) {
        const [oldestKey, dropped] = oldest;
        this.#servers.delete(oldestKey);
        dropped.dropped = true;
        if (dropped.connections === 0) dropped.server.close();
      }
    }
    return entry;
  }

  #render = (page: EdgePage, edgeId: string | undefined) => renderPage(page, edgeId);

  /** An HTTP/2 request whose body did not arrive in time: a 408 unless an answer already started. */
  #answerRequestTimeout(stream: ServerHttp2Stream): void {
    this.#count(undefined, undefined, 'request-timeout');
    if (stream.headersSent) return;
    const page = Pages.requestTimeout();
    const { headers, body } = renderPage(page, undefined);
    stream.respond({ ':status': page.status, ...headers, 'content-length': Buffer.byteLength(body) });
    stream.end(body);
  }

  #count(edgeId: string | undefined, routeId: string | undefined, outcome: string): void {
    this.metrics.httpRequests.inc({ edge_id: edgeId ?? 'none', route_id: routeId ?? 'none', outcome });
  }

  #onRequest(request: AnyRequest, response: AnyResponse): void {
    response.once('close', this.#inFlight.begin());
    if (this.#draining && !(response instanceof http2.Http2ServerResponse)) response.shouldKeepAlive = false;
    const incoming: IncomingRequest = {
      method: request.method ?? 'GET',
      target: request.url ?? '/',
      headers: request.headers,
      rawHeaders: request.rawHeaders,
      socket: request.socket as tls.TLSSocket,
      body: request as Readable,
      hasBody: hasBody(request),
      upgrade: false,
    };
    admit(incoming, this.table, this.#render, this.#limits)
      .then((admission) => {
        if (admission.kind === 'reply') {
          this.#count(admission.edgeId, admission.routeId, admission.reply.outcome);
          sendReply(response, admission.reply, incoming.method);
          return;
        }
        this.#forward(response, admission);
      })
      .catch((error: unknown) => {
        this.log.error({ err: error }, 'HTTPS request failed inside the edge');
        if (!response.headersSent)
          sendReply(
            response,
            { ...pageReply(Pages.upstreamFailed(), undefined), outcome: 'internal' },
            incoming.method,
          );
        else response.destroy();
      });
  }

  #sendPage(response: AnyResponse, page: EdgePage, admitted: Admitted): void {
    this.#count(admitted.entry.edge.id, admitted.route.id, page.code);
    sendReply(response, pageReply(page, admitted.entry.edge.id), admitted.request.method);
  }

  /**
   * Sends the request to an agent of the route's backend and the answer back, streaming both ways,
   * over a kept-alive upstream connection of the group when one is idle. A request without a body
   * whose reused connection failed before any answer (the service closed it meanwhile) is sent once
   * more on a fresh one, as browsers do.
   */
  #forward(response: AnyResponse, admitted: Admitted, retried = false): void {
    const { request, modules } = admitted;
    // The upstream message is framed from what this edge parsed, never from what the client's
    // headers claim: a body without a length checked here goes chunked, no body goes without one.
    const headers: HeaderRecord = { ...admitted.headers };
    const streamed = !admitted.body && request.hasBody;
    if (streamed && headers['content-length'] === undefined) headers['transfer-encoding'] = 'chunked';
    if (!admitted.body && !request.hasBody) delete headers['content-length'];
    const upstream = http.request({
      agent: this.#upstreams.for(admitted.labels),
      method: request.method,
      path: admitted.target,
      headers: headers as http.OutgoingHttpHeaders,
      setHost: false,
    });
    let answered = false;
    upstream.on('error', (error) => {
      if (answered) {
        response.destroy();
        return;
      }
      if (!retried && upstream.reusedSocket && !admitted.body && REPLAYABLE_METHODS.has(request.method)) {
        this.#forward(response, admitted, true);
        return;
      }
      modules.onUpstreamResult('error');
      this.log.info(
        { edgeId: admitted.entry.edge.id, routeId: admitted.route.id, reason: error.message },
        'request not carried',
      );
      if (!response.headersSent) {
        this.#sendPage(
          response,
          error instanceof NoOnlineSession ? Pages.noSession() : Pages.upstreamFailed(),
          admitted,
        );
      }
    });
    // A client that goes away takes its upstream request (and that connection) with it.
    response.on('close', () => {
      if (!response.writableFinished) upstream.destroy();
    });
    upstream.on('response', (answer) => {
      answered = true;
      modules.onUpstreamResult(answer.statusCode ?? 'error');
      this.#respond(response, admitted, answer);
    });
    if (admitted.body) upstream.end(admitted.body);
    else if (streamed && !retried) pipeline(request.body, upstream, () => {});
    else upstream.end();
  }

  /** Relays the upstream's answer through the route's modules (`onResponse`, in table order). */
  #respond(response: AnyResponse, admitted: Admitted, answer: IncomingMessage): void {
    const status = answer.statusCode ?? 0;
    // Only a final status HTTP/1.1 and HTTP/2 clients both accept is relayed (node:http2 throws on others).
    if (status < 200 || status > 599) {
      answer.destroy();
      this.log.info({ routeId: admitted.route.id, status }, 'upstream answered with an invalid status');
      this.#sendPage(response, Pages.upstreamFailed(), admitted);
      return;
    }
    const exchange: ResponseExchange = {
      admitted,
      status,
      headers: endToEnd(answer.headers),
      transform: undefined,
    };
    const replaced = admitted.modules.onResponse(exchange);
    if (replaced) {
      answer.resume();
      this.#count(admitted.entry.edge.id, admitted.route.id, replaced.outcome);
      sendReply(response, replaced, admitted.request.method);
      return;
    }
    const { headers } = exchange;
    if (admitted.setCookies.length > 0) {
      const existing = headers['set-cookie'];
      headers['set-cookie'] = [
        ...(Array.isArray(existing) ? existing : existing ? [existing] : []),
        ...admitted.setCookies,
      ];
    }
    try {
      writeHead(response, status, headers as http.OutgoingHttpHeaders);
    } catch (error) {
      // A header value or name node:http(2) refuses: the client gets a 502, the edge goes on.
      answer.destroy();
      this.log.info(
        { routeId: admitted.route.id, reason: error instanceof Error ? error.message : String(error) },
        'upstream response not relayable',
      );
      this.#sendPage(response, Pages.upstreamFailed(), admitted);
      return;
    }
    this.#count(admitted.entry.edge.id, admitted.route.id, `${Math.floor(status / 100)}xx`);
    // One pipeline, so an upstream that fails mid-body fails the response too (never a hang).
    const done = (error: Error | null) => {
      if (error) answer.destroy();
    };
    if (exchange.transform) pipeline(answer, exchange.transform, response as NodeJS.WritableStream, done);
    else pipeline(answer, response as NodeJS.WritableStream, done);
  }

  /**
   * HTTP/1.1 upgrades (WebSocket): the same admission as any request. The upgrade request goes to
   * the service, and only its `101` turns the connection into a raw pipe; any other answer is
   * relayed and the connection closed, so no later request on it can skip the route's modules. A
   * module may take the connection over instead (`websocket_tcp_converter`).
   */
  #onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => {});
    const incoming: IncomingRequest = {
      method: request.method ?? 'GET',
      target: request.url ?? '/',
      headers: request.headers,
      rawHeaders: request.rawHeaders,
      socket: request.socket as tls.TLSSocket,
      body: request,
      hasBody: false,
      upgrade: true,
    };
    admit(incoming, this.table, this.#render, this.#limits)
      .then(async (admission) => {
        if (admission.kind === 'reply') {
          this.#count(admission.edgeId, admission.routeId, admission.reply.outcome);
          writeRawReply(socket, admission.reply);
          return;
        }
        const { modules } = admission;
        const fail = (page: EdgePage) => {
          this.#count(admission.entry.edge.id, admission.route.id, page.code);
          writeRawReply(socket, pageReply(page, admission.entry.edge.id));
        };
        let stream: Duplex;
        try {
          stream = writeBuffersOnly(
            await this.pool.connect(admission.labels, {
              ip: admission.clientIp,
              port: request.socket.remotePort ?? 0,
            }),
          );
        } catch (error) {
          modules.onUpstreamResult('error');
          fail(error instanceof NoOnlineSession ? Pages.noSession() : Pages.upstreamFailed());
          return;
        }
        socket.once('close', () => stream.destroy());
        this.#count(admission.entry.edge.id, admission.route.id, 'upgrade');
        if (modules.onUpgrade({ request, socket, head, stream })) return;
        this.#relayUpgrade(admission, { request, socket, head, stream }, fail);
      })
      .catch((error: unknown) => {
        this.log.error({ err: error }, 'HTTPS upgrade failed inside the edge');
        socket.destroy();
      });
  }

  /** Sends an admitted upgrade request to the service: its `101` makes a raw pipe, anything else is relayed and closed. */
  #relayUpgrade(admission: Admitted, upgrade: UpgradeExchange, fail: (page: EdgePage) => void): void {
    const { modules } = admission;
    const { request, socket, head, stream } = upgrade;
    const upstream = http.request({
      createConnection: () => stream as net.Socket,
      method: admission.request.method,
      path: admission.target,
      headers: {
        ...admission.headers,
        connection: 'Upgrade',
        ...(request.headers.upgrade !== undefined && { upgrade: request.headers.upgrade }),
      } as http.OutgoingHttpHeaders,
      setHost: false,
    });
    const answerHeaders = (answer: IncomingMessage): HeaderRecord =>
      modules.onUpgradeResponse(endToEnd(answer.headers));
    upstream.on('upgrade', (answer: IncomingMessage, upstreamSocket: Duplex, upstreamHead: Buffer) => {
      modules.onUpstreamResult(101);
      const headers = {
        ...answerHeaders(answer),
        connection: 'Upgrade',
        ...(answer.headers.upgrade !== undefined && { upgrade: answer.headers.upgrade }),
      };
      socket.write(responseHead(101, headers));
      if (upstreamHead.length > 0) socket.write(upstreamHead);
      if (head.length > 0) upstreamSocket.write(head);
      pipeline(socket, upstreamSocket, socket, () => {
        socket.destroy();
        upstreamSocket.destroy();
      });
    });
    upstream.on('response', (answer) => {
      const status = answer.statusCode ?? 0;
      modules.onUpstreamResult(answer.statusCode ?? 'error');
      if (status < 200 || status > 599) {
        answer.destroy();
        fail(Pages.upstreamFailed());
        return;
      }
      // The upgrade was refused: relay the answer and close, never a pipe.
      const headers = { ...answerHeaders(answer), connection: 'close' };
      socket.write(responseHead(status, headers));
      pipeline(answer, socket, () => socket.destroy());
    });
    upstream.on('error', () => {
      modules.onUpstreamResult('error');
      if (!socket.destroyed && socket.writable) fail(Pages.upstreamFailed());
      stream.destroy();
    });
    upstream.end();
  }
}

/** Whether a body follows the request head, as Node's own parser framed it. */
function hasBody(request: AnyRequest): boolean {
  if ('stream' in request) return !request.stream.endAfterHeaders;
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function pageReply(page: EdgePage, edgeId: string | undefined): EdgeReply {
  const { headers, body } = renderPage(page, edgeId);
  return { status: page.status, headers, body, outcome: page.code };
}

function sendReply(response: AnyResponse, reply: EdgeReply, method: string): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const body = Buffer.from(reply.body);
  writeHead(response, reply.status, {
    ...reply.headers,
    'content-length': String(body.length),
  } as http.OutgoingHttpHeaders);
  if (method === 'HEAD') response.end();
  else response.end(body);
}

function writeRawReply(socket: Duplex, reply: EdgeReply): void {
  const body = Buffer.from(reply.body);
  const headers: HeaderRecord = {
    ...reply.headers,
    'content-length': String(body.length),
    connection: 'close',
  };
  socket.end(Buffer.concat([Buffer.from(responseHead(reply.status, headers)), body]));
}

function headerLines(headers: HeaderRecord): string {
  let lines = '';
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) lines += `${name}: ${item}\r\n`;
  }
  return lines;
}

function responseHead(status: number, headers: HeaderRecord): string {
  return `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\n${headerLines(headers)}\r\n`;
}
