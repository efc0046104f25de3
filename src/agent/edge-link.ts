import { EventEmitter } from 'node:events';
import http2, { type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { isIP } from 'node:net';
import tls from 'node:tls';
import {
  type AgentHelloV2,
  type LiveEdge,
  liveEdges,
  SourceHeader,
  sessionVerdictV2,
  TUNNEL_ALPN,
  TUNNEL_ALPN_V2,
  TUNNEL_WINDOW_BYTES,
  TunnelPath,
} from '../schemas/tunnel-protocol.js';
import { currentEdgeCa, type EdgeCa } from './edge-ca.js';

export interface CarriedSource {
  ip: string;
  port: number;
}

export interface EdgeLinkOptions {
  host: string;
  port: number;
  /** The name the edge's certificate is checked against (SNI too when it is a name). */
  serverName: string | undefined;
  /** What the edge's certificate is checked against: a function is asked now, at this dial. */
  ca: EdgeCa | undefined;
  /** The hello, made when the edge asks (it names the edges held at that moment). */
  hello(): AgentHelloV2;
  carry(stream: ServerHttp2Stream, source: CarriedSource | undefined): void;
  command(stream: ServerHttp2Stream): void;
  /** From dialing to the verdict (default `VERDICT_TIMEOUT_MS`). */
  verdictTimeoutMs?: number;
}

type EdgeLinkEvents = {
  /** The edge made a session; `edgeId` and `edges` are known from version 2 edges only. */
  session: [id: string, edgeId: string | undefined, edges: LiveEdge[] | undefined];
  /** The edge is one this agent already holds: no session was made. */
  alreadyHeld: [edgeId: string];
  refused: [reason: string];
  /** The edge told the live edges again. */
  edges: [LiveEdge[]];
  /** The edge is draining (HTTP/2 GOAWAY): open a replacement elsewhere; this one ends soon. */
  draining: [];
  /** The connection ended; `sessionId` is the session it carried, if one was made. */
  closed: [reason: string, sessionId: string | undefined];
};

/** How long a graceful close may take before the socket is destroyed. */
const CLOSE_GRACE_MS = 2_000;

/**
 * From dialing to the edge's verdict: an edge that accepts the connection and then says nothing (a
 * frozen process, a black-holed address) must not hold the agent's dial for ever. The edge itself
 * gives TLS and the hello 10 s each.
 */
export const VERDICT_TIMEOUT_MS = 30_000;

/**
 * One connection of an agent to one edge: TLS, then HTTP/2 served by the agent so the edge can open
 * a stream per carried connection. The edge asks for the hello, gives its verdict, then opens
 * streams and sends commands; the agent (`agent.ts`) decides what to do with each.
 */
export class EdgeLink extends EventEmitter<EdgeLinkEvents> {
  readonly #socket: tls.TLSSocket;
  #h2: ServerHttp2Session | undefined;
  #sessionId: string | undefined;
  #edgeId: string | undefined;
  #draining = false;
  #closeReason = 'connection closed';
  readonly #verdictTimer: NodeJS.Timeout;

  constructor(private readonly options: EdgeLinkOptions) {
    super();
    const { host, port } = options;
    // The certificate is checked against one name whichever edge is dialed (an edge reached by its
    // own address serves the shared certificate). SNI carries names only (RFC 6066); an IP literal
    // is checked against the certificate's IP SANs.
    const name = options.serverName ?? host;
    const ca = currentEdgeCa(options.ca);
    this.#socket = tls.connect({
      host,
      port,
      ...(isIP(name) ? {} : { servername: name }),
      checkServerIdentity: (_host, cert) => tls.checkServerIdentity(name, cert),
      ALPNProtocols: [TUNNEL_ALPN_V2, TUNNEL_ALPN],
      ...(ca ? { ca } : {}),
    });
    const socket = this.#socket;
    const verdictTimeoutMs = options.verdictTimeoutMs ?? VERDICT_TIMEOUT_MS;
    this.#verdictTimer = setTimeout(
      () => this.close(false, `the edge gave no verdict within ${verdictTimeoutMs / 1000} s`),
      verdictTimeoutMs,
    );
    socket.once('secureConnect', () => {
      const server = http2.createServer({ settings: { initialWindowSize: TUNNEL_WINDOW_BYTES } });
      server.on('session', (session) => {
        this.#h2 = session;
        session.setLocalWindowSize(TUNNEL_WINDOW_BYTES);
        // The edge's GOAWAY: it is draining and opens no new stream here.
        session.once('goaway', () => this.#onDraining());
      });
      server.on('stream', (stream, headers) => this.#onStream(stream, headers));
      server.on('sessionError', (error: Error) => {
        this.#closeReason = error.message;
      });
      server.emit('connection', socket);
    });
    socket.on('error', (error: Error) => {
      this.#closeReason = error.message;
    });
    socket.once('close', () => {
      clearTimeout(this.#verdictTimer);
      const sessionId = this.#sessionId;
      this.#sessionId = undefined;
      this.#h2 = undefined;
      this.emit('closed', this.#closeReason, sessionId);
    });
  }

  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  /** The edge's id, once a version 2 edge said it. */
  get edgeId(): string | undefined {
    return this.#edgeId;
  }

  get draining(): boolean {
    return this.#draining;
  }

  /** The HTTP/2 session, once the TLS handshake is done (for liveness pings). */
  get http2Session(): ServerHttp2Session | undefined {
    return this.#h2;
  }

  /** Ends the link: gracefully (a GOAWAY once open streams finished) or at once. */
  close(graceful: boolean, reason: string): void {
    this.#closeReason = reason;
    const socket = this.#socket;
    const h2 = this.#h2;
    if (!graceful || !h2 || h2.closed || h2.destroyed) {
      socket.destroy();
      return;
    }
    const timer = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    h2.close(() => socket.destroy());
  }

  #onDraining(): void {
    if (this.#draining) return;
    this.#draining = true;
    this.#closeReason = 'the edge drained';
    this.emit('draining');
  }

  #onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    stream.on('error', () => {}); // a reset stream is one carried connection ending, not the session
    const path = headers[':path'];
    if (path === TunnelPath.hello) {
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      const hello = this.options.hello();
      // A version 1 edge refuses fields it does not know.
      const { held_edge_ids: held, ...v1 } = hello;
      stream.end(
        JSON.stringify(
          this.#socket.alpnProtocol === TUNNEL_ALPN_V2 ? { ...v1, held_edge_ids: held ?? [] } : v1,
        ),
      );
    } else if (path === TunnelPath.session) {
      readJson(stream).then(
        (body) => {
          stream.respond({ ':status': 204 });
          stream.end();
          this.#onVerdict(body);
        },
        () => stream.close(http2.constants.NGHTTP2_PROTOCOL_ERROR),
      );
    } else if (path === TunnelPath.edges) {
      readJson(stream).then(
        (body) => {
          const parsed = liveEdges.safeParse(body);
          stream.respond({ ':status': parsed.success ? 204 : 400 });
          stream.end();
          if (parsed.success) this.emit('edges', parsed.data.edges);
        },
        () => stream.close(http2.constants.NGHTTP2_PROTOCOL_ERROR),
      );
    } else if (path === TunnelPath.connect) {
      this.options.carry(stream, sourceOf(headers));
    } else if (path === TunnelPath.command) {
      this.options.command(stream);
    } else {
      stream.respond({ ':status': 404 });
      stream.end();
    }
  }

  #onVerdict(body: unknown): void {
    clearTimeout(this.#verdictTimer);
    const parsed = sessionVerdictV2.safeParse(body);
    if (!parsed.success) {
      // A version 1 verdict is the session id alone.
      const id = (body as { session_id?: unknown } | null)?.session_id;
      if (typeof id === 'string' && id !== '') {
        this.#sessionId = id;
        this.emit('session', id, undefined, undefined);
      } else this.close(false, 'the edge sent a verdict the agent cannot read');
      return;
    }
    const verdict = parsed.data;
    if ('error' in verdict) this.emit('refused', verdict.error);
    else if ('already_held' in verdict) {
      this.#edgeId = verdict.already_held;
      this.emit('alreadyHeld', verdict.already_held);
      this.close(true, 'already holding a session on this edge');
    } else {
      this.#sessionId = verdict.session_id;
      this.#edgeId = verdict.edge_id;
      this.emit('session', verdict.session_id, verdict.edge_id, verdict.edges);
    }
  }
}

function sourceOf(headers: IncomingHttpHeaders): CarriedSource | undefined {
  const ip = headers[SourceHeader.ip];
  const port = Number(headers[SourceHeader.port]);
  if (typeof ip !== 'string' || ip === '' || !Number.isInteger(port)) return undefined;
  return { ip, port };
}

export function readJson(stream: ServerHttp2Stream): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > 64 * 1024) stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
    });
    stream.once('end', () => {
      try {
        resolve(JSON.parse(text));
      } catch (error) {
        reject(error);
      }
    });
    stream.once('error', reject);
  });
}
