import http2, {
  type Http2SecureServer,
  type IncomingHttpHeaders,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream';
import { InFlight } from '../../lib/in-flight.js';
import { TUNNEL_WINDOW_BYTES } from '../../schemas/tunnel-protocol.js';
import type { TunnelSession } from '../routing/tunnel-session.js';
import { RELAY_PATH, RelayHeader } from './relay-protocol.js';
import { relayServerTls } from './relay-tls.js';

export interface RelayEndpointOptions {
  edgeKey: string;
  /** A session this edge holds and may open a new stream on (not closed, not draining). */
  localSession(id: string): TunnelSession | undefined;
  /** A relay connection that completes no TLS handshake within this is closed (ms). */
  handshakeTimeoutMs?: number;
  /** One relayed connection: carried, or why not. */
  onRelayed?(outcome: 'carried' | 'unknown-session' | 'unreachable'): void;
}

/**
 * Where other edges pass connections for sessions this edge holds (see `relay-protocol.ts`):
 * HTTP/2 over TLS with the edges' shared key. Only sessions held here are served: a relayed
 * connection is never relayed on, so two edges can never bounce one between them.
 */
export class RelayEndpoint {
  readonly #server: Http2SecureServer;
  readonly #sessions = new Set<ServerHttp2Session>();
  /** Connections being carried for other edges: a drain waits for them as for its own. */
  readonly #carrying = new InFlight();

  constructor(private readonly options: RelayEndpointOptions) {
    this.#server = http2.createSecureServer({
      ...relayServerTls(options.edgeKey),
      handshakeTimeout: options.handshakeTimeoutMs ?? 10_000,
      settings: { initialWindowSize: TUNNEL_WINDOW_BYTES },
    });
    // An idle relay connection between two live edges is kept; a dead one is found by the peer's PINGs.
    this.#server.on('session', (session) => {
      this.#sessions.add(session);
      session.once('close', () => this.#sessions.delete(session));
      session.on('connect', () => session.setLocalWindowSize(TUNNEL_WINDOW_BYTES));
    });
    this.#server.on('stream', (stream, headers) => this.#onStream(stream, headers));
    // A failed handshake (a caller without the edge key) is that caller's connection ending.
    this.#server.on('tlsClientError', () => {});
  }

  async listen(port: number, host: string): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    return this.#server.address() as AddressInfo;
  }

  /** Resolves once no relayed connection is being carried. */
  drained(): Promise<void> {
    return this.#carrying.idle();
  }

  /**
   * Stops accepting and ends every relay connection: by now (the edge's drain is over) what they
   * still carry is cut, as the edge's own connections are.
   */
  close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const session of this.#sessions) session.destroy();
    return closed;
  }

  #onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    stream.on('error', () => {}); // a reset stream is one relayed connection ending, not the relay
    const sessionId = headers[RelayHeader.sessionId];
    if (headers[':path'] !== RELAY_PATH || headers[':method'] !== 'POST' || typeof sessionId !== 'string') {
      stream.respond({ ':status': 404 }, { endStream: true });
      return;
    }
    const session = this.options.localSession(sessionId);
    if (!session) {
      this.options.onRelayed?.('unknown-session');
      stream.respond({ ':status': 404 }, { endStream: true });
      return;
    }
    const ip = headers[RelayHeader.sourceIp];
    const port = Number(headers[RelayHeader.sourcePort]);
    const source = { ip: typeof ip === 'string' ? ip : 'unknown', port: Number.isInteger(port) ? port : 0 };
    session.openStream(source).then(
      (upstream) => {
        if (stream.destroyed) {
          upstream.destroy();
          return;
        }
        this.options.onRelayed?.('carried');
        const carried = this.#carrying.begin();
        stream.respond({ ':status': 200 });
        let ended = false;
        const end = () => {
          if (ended) return;
          ended = true;
          upstream.destroy();
          carried();
        };
        pipeline(stream, upstream, stream, end);
        // Once the sending edge's stream is closed nothing more can cross, whatever the upstream's
        // own state: the pipeline may still wait on it (an ssh2 channel whose reading stopped).
        stream.once('close', end);
      },
      () => {
        this.options.onRelayed?.('unreachable');
        if (!stream.destroyed) stream.respond({ ':status': 502 }, { endStream: true });
      },
    );
  }
}
