import { createHash } from 'node:crypto';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream';
import tls from 'node:tls';
import { type ClientHello, ClientHelloError, readClientHello } from './client-hello.js';

/**
 * The public listener of TLS edges. Per connection: peek at the ClientHello (SNI), ask `resolve`
 * for the edge serving that name to that client, then either pass the bytes through untouched to
 * an agent (`passthrough`: the agent's service terminates TLS) or terminate TLS here with the
 * edge's certificate and carry the cleartext (`terminate`, optionally with mutual TLS).
 */

export type TlsVersion = '1.0' | '1.1' | '1.2' | '1.3';

export type TlsRoute = TlsCarriedRoute | TlsHttpRoute;

/**
 * An HTTPS edge: TLS and HTTP are served by the edge's HTTPS front, which takes the socket with
 * its ClientHello put back. The listener still owns the socket's life: closing it ends both.
 */
export interface TlsHttpRoute {
  edgeId: string;
  allowed: true;
  mode: 'http';
  serve(socket: net.Socket): void;
}

export interface TlsCarriedRoute {
  edgeId: string;
  /** false: close the connection before the handshake (an IP restriction or the policy denied it). */
  allowed: boolean;
  mode: 'terminate' | 'passthrough';
  /** terminate only: the server certificate and key (PEM), min version, and mutual TLS CAs. */
  certificate?: { cert: string; key: string };
  /** Default '1.2'. */
  minVersion?: TlsVersion;
  /** Present = mutual TLS required: client certificates must chain to one of these (PEM). */
  clientCas?: string[];
  /** Opens the stream to an agent of the edge's backend; rejects when none is online. */
  connect(source: { ip: string; port: number }): Promise<Duplex>;
}

export type TlsEdgeEventType =
  | 'accepted'
  | 'acme_challenge'
  | 'no_edge'
  | 'ip_denied'
  | 'no_session'
  | 'handshake_failed'
  | 'closed';

/**
 * One step of a connection, for metrics and logs. Every connection gets at most one of `accepted`
 * (carried to an agent), `no_edge`, `ip_denied`, `no_session` or `handshake_failed`, then `closed`.
 * Never carries keys, certificates or payload.
 */
export interface TlsEdgeEvent {
  type: TlsEdgeEventType;
  edgeId?: string;
  /** The client's address (IPv4-mapped IPv6 addresses as plain IPv4). */
  ip: string;
  port: number;
  /** The SNI the client sent, when the ClientHello was read. */
  serverName?: string;
  /** Why a connection was refused, for `handshake_failed`, `no_session` and a failed `no_edge` lookup. */
  reason?: string;
  /** `closed` only: bytes received from / sent to the client on the wire (TLS records included). */
  bytesIn?: number;
  bytesOut?: number;
}

export interface TlsEdgeListenerOptions {
  /** The edge for an SNI (undefined: the client sent none) and client address. */
  resolve(
    serverName: string | undefined,
    clientIp: string,
    clientPort: number,
  ): TlsRoute | undefined | Promise<TlsRoute | undefined>;
  onEvent?(event: TlsEdgeEvent): void;
  /**
   * The TLS-ALPN-01 certificate (RFC 8737) of a pending ACME challenge for `serverName`, asked when
   * a client offers only `acme-tls/1`, as a CA's validation does; undefined when none is pending.
   */
  acmeChallengeCertificate?(
    serverName: string,
  ): { cert: string; key: string } | undefined | Promise<{ cert: string; key: string } | undefined>;
  /** Errors of the listening socket after `listen()` resolved (e.g. EMFILE on accept). */
  onError?(error: Error): void;
  /** Time to receive a complete ClientHello. Default 10 s. */
  clientHelloTimeoutMs?: number;
  /** Time to complete the TLS handshake (terminate mode). Default 10 s. */
  handshakeTimeoutMs?: number;
  /** How long `close()` lets open connections finish by default. Default 30 s. */
  closeTimeoutMs?: number;
}

const TLS_VERSIONS: Record<TlsVersion, tls.SecureVersion> = {
  '1.0': 'TLSv1',
  '1.1': 'TLSv1.1',
  '1.2': 'TLSv1.2',
  '1.3': 'TLSv1.3',
};
const DEFAULT_MIN_VERSION: TlsVersion = '1.2';
/** Secure contexts kept, least recently used dropped first. */
const MAX_SECURE_CONTEXTS = 512;
/** How long a refused connection may linger after our FIN before it is destroyed. */
const LINGER_MS = 2_000;

/** The ALPN protocol of ACME's TLS-ALPN-01 validation (RFC 8737 §6.2). */
export const ACME_TLS_ALPN = 'acme-tls/1';

/** TLS alert descriptions (RFC 8446 §6). */
const ALERT_INTERNAL_ERROR = 80;
const ALERT_UNRECOGNIZED_NAME = 112;

interface Connection {
  raw: net.Socket;
  ip: string;
  port: number;
  serverName?: string;
  edgeId?: string;
  /**
   * The streams destroyed together: the client's socket (or the TLS socket that took it over)
   * first, then the agent's stream once there is one.
   */
  streams: Duplex[];
  /** The one outcome event was sent. */
  reported: boolean;
}

type CachedContext = { context: tls.SecureContext } | { error: Error };

export class TlsEdgeListener {
  readonly #options: TlsEdgeListenerOptions;
  readonly #server: net.Server;
  readonly #connections = new Set<Connection>();
  readonly #contexts = new Map<string, CachedContext>();
  #onIdle: (() => void)[] = [];
  #closing: Promise<void> | undefined;

  constructor(options: TlsEdgeListenerOptions) {
    this.#options = options;
    this.#server = net.createServer({ allowHalfOpen: true, noDelay: true }, (socket) => this.#accept(socket));
  }

  /** Starts listening; resolves with the bound address. */
  listen(port = 0, host = '0.0.0.0'): Promise<net.AddressInfo> {
    return new Promise((resolve, reject) => {
      const fail = (error: Error) => reject(error);
      this.#server.once('error', fail);
      this.#server.listen(port, host, () => {
        this.#server.off('error', fail);
        this.#server.on('error', (error) => this.#options.onError?.(error));
        resolve(this.#server.address() as net.AddressInfo);
      });
    });
  }

  address(): net.AddressInfo | null {
    const address = this.#server.address();
    return typeof address === 'object' ? address : null;
  }

  /** Connections open right now (including those still sending their ClientHello). */
  get connectionCount(): number {
    return this.#connections.size;
  }

  /**
   * Stops accepting, lets open connections finish for up to `deadlineMs`, then destroys the rest.
   * Resolves once every connection is closed; calling it again returns the same promise.
   */
  close(deadlineMs = this.#options.closeTimeoutMs ?? 30_000): Promise<void> {
    this.#closing ??= (async () => {
      const stopped = new Promise<void>((resolve) => this.#server.close(() => resolve()));
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, deadlineMs);
      });
      await Promise.race([this.#idle(), deadline]);
      clearTimeout(timer);
      for (const connection of this.#connections) destroyAll(connection);
      await this.#idle();
      await stopped;
    })();
    return this.#closing;
  }

  #idle(): Promise<void> {
    if (this.#connections.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#onIdle.push(resolve));
  }

  #emit(event: TlsEdgeEvent): void {
    try {
      this.#options.onEvent?.(event);
    } catch {
      // A metrics or log callback must not break the connection it reports on.
    }
  }

  /** The one outcome event of a connection. */
  #report(connection: Connection, type: Exclude<TlsEdgeEventType, 'closed'>, reason?: string): void {
    if (connection.reported) return;
    connection.reported = true;
    this.#emit({
      type,
      ip: connection.ip,
      port: connection.port,
      ...(connection.edgeId !== undefined && { edgeId: connection.edgeId }),
      ...(connection.serverName !== undefined && { serverName: connection.serverName }),
      ...(reason !== undefined && { reason }),
    });
  }

  #accept(raw: net.Socket): void {
    const ip = plainIp(raw.remoteAddress);
    if (ip === undefined) {
      raw.destroy();
      return;
    }
    const connection: Connection = { raw, ip, port: raw.remotePort ?? 0, streams: [raw], reported: false };
    this.#connections.add(connection);
    // Resets are ordinary; whichever stage is running reacts to the 'close' that follows.
    raw.on('error', () => {});
    raw.once('close', () => this.#closed(connection));
    this.#serve(connection).catch((error: unknown) => {
      this.#report(connection, 'handshake_failed', `internal error: ${describe(error)}`);
      destroyAll(connection);
    });
  }

  /** Once per connection, when its socket (or the TLS socket that took it over) has closed. */
  #closed(connection: Connection): void {
    if (!this.#connections.delete(connection)) return;
    destroyAll(connection);
    const { raw, ip } = connection;
    this.#emit({
      type: 'closed',
      ip,
      port: connection.port,
      ...(connection.edgeId !== undefined && { edgeId: connection.edgeId }),
      bytesIn: raw.bytesRead,
      bytesOut: raw.bytesWritten,
    });
    if (this.#connections.size === 0) {
      const waiting = this.#onIdle;
      this.#onIdle = [];
      for (const resolve of waiting) resolve();
    }
  }

  async #serve(connection: Connection): Promise<void> {
    const { raw } = connection;
    let hello: ClientHello;
    try {
      hello = await readClientHello(raw, { timeoutMs: this.#options.clientHelloTimeoutMs });
    } catch (error) {
      this.#report(connection, 'handshake_failed', describe(error));
      raw.destroy();
      return;
    }
    connection.serverName = hello.serverName;
    if (await this.#answeredAcmeChallenge(connection, hello)) return;

    let route: TlsRoute | undefined;
    try {
      route = await this.#options.resolve(hello.serverName, connection.ip, connection.port);
    } catch (error) {
      this.#report(connection, 'no_edge', `resolving the edge failed: ${describe(error)}`);
      raw.destroy();
      return;
    }
    if (raw.destroyed) return;
    if (!route) {
      this.#report(connection, 'no_edge');
      refuse(raw, alert(hello.buffered, ALERT_UNRECOGNIZED_NAME));
      return;
    }
    connection.edgeId = route.edgeId;
    if (!route.allowed) {
      this.#report(connection, 'ip_denied');
      raw.destroy();
      return;
    }
    if (route.mode === 'http') this.#handOver(connection, route, hello);
    else if (route.mode === 'passthrough') await this.#passthrough(connection, route, hello);
    else this.#terminate(connection, route, hello);
  }

  /**
   * A CA validating TLS-ALPN-01 offers only `acme-tls/1`: the handshake with the challenge's
   * certificate is the whole answer (no application data), whichever edge the name routes to.
   */
  async #answeredAcmeChallenge(connection: Connection, hello: ClientHello): Promise<boolean> {
    const lookup = this.#options.acmeChallengeCertificate;
    if (!lookup || hello.serverName === undefined) return false;
    if (hello.alpnProtocols.length !== 1 || hello.alpnProtocols[0] !== ACME_TLS_ALPN) return false;
    const certificate = await lookup(hello.serverName);
    if (!certificate) return false;
    const { raw } = connection;
    if (this.#closedBeforeHandshake(connection)) return true;
    raw.unshift(hello.buffered);
    const secure = new tls.TLSSocket(raw, {
      isServer: true,
      secureContext: tls.createSecureContext({ cert: certificate.cert, key: certificate.key }),
      ALPNProtocols: [ACME_TLS_ALPN],
    });
    connection.streams[0] = secure;
    const timer = setTimeout(() => destroyAll(connection), this.#options.handshakeTimeoutMs ?? 10_000);
    secure.on('error', (error) => {
      this.#report(connection, 'handshake_failed', `ACME challenge: ${describe(error)}`);
      destroyAll(connection);
    });
    secure.once('close', () => {
      clearTimeout(timer);
      this.#closed(connection);
    });
    secure.once('secure', () => {
      clearTimeout(timer);
      this.#report(connection, 'acme_challenge');
      secure.end();
    });
    return true;
  }

  /** A client that sent its ClientHello and EOF: nothing to hand over, reported and closed. */
  #closedBeforeHandshake(connection: Connection): boolean {
    if (!connection.raw.readableEnded) return false;
    this.#report(connection, 'handshake_failed', 'the client closed the connection before the TLS handshake');
    connection.raw.destroy();
    return true;
  }

  /** HTTPS: the front terminates TLS and serves HTTP on the socket, ClientHello put back first. */
  #handOver(connection: Connection, route: TlsHttpRoute, hello: ClientHello): void {
    const { raw } = connection;
    if (this.#closedBeforeHandshake(connection)) return;
    raw.unshift(hello.buffered);
    this.#report(connection, 'accepted');
    route.serve(raw);
  }

  /** The client's bytes, ClientHello included, go untouched to the agent, which terminates TLS. */
  async #passthrough(connection: Connection, route: TlsCarriedRoute, hello: ClientHello): Promise<void> {
    const { raw } = connection;
    const upstream = await this.#connectUpstream(connection, route);
    if (!upstream) {
      refuse(raw);
      return;
    }
    if (raw.destroyed) {
      upstream.destroy();
      return;
    }
    connection.streams.push(upstream);
    this.#report(connection, 'accepted');
    upstream.write(hello.buffered);
    carry(connection, raw, upstream);
  }

  /** TLS ends here with the edge's certificate; the cleartext is carried to the agent. */
  #terminate(connection: Connection, route: TlsCarriedRoute, hello: ClientHello): void {
    const { raw } = connection;
    const cached = this.#secureContext(route);
    if ('error' in cached) {
      this.#report(connection, 'handshake_failed', cached.error.message);
      refuse(raw, alert(hello.buffered, ALERT_INTERNAL_ERROR));
      return;
    }
    if (this.#closedBeforeHandshake(connection)) return;
    // Replay the ClientHello: the TLS socket reads what is buffered on `raw` before its handle.
    raw.unshift(hello.buffered);
    const mutual = route.clientCas !== undefined;
    const secure = new tls.TLSSocket(raw, {
      isServer: true,
      secureContext: cached.context,
      requestCert: mutual,
      rejectUnauthorized: mutual,
    });
    // The TLS socket owns the TCP handle now: destroying `raw` under it would free the handle
    // beneath OpenSSL. Tear down through `secure` only.
    connection.streams[0] = secure;
    let handshaken = false;
    const failHandshake = (reason: string) => {
      clearTimeout(timer);
      this.#report(connection, 'handshake_failed', reason);
      destroyAll(connection);
    };
    const timer = setTimeout(
      () => failHandshake('the TLS handshake timed out'),
      this.#options.handshakeTimeoutMs ?? 10_000,
    );
    secure.on('error', (error) => {
      if (!handshaken) failHandshake(describe(error));
    });
    // With half-open sockets an EOF alone closes nothing: during the handshake it is a failure.
    secure.once('end', () => {
      if (!handshaken) failHandshake('the client closed the connection during the TLS handshake');
    });
    secure.once('close', () => {
      clearTimeout(timer);
      this.#closed(connection);
    });
    secure.once('secure', () => {
      handshaken = true;
      clearTimeout(timer);
      const problem = mutual ? clientCertificateProblem(secure) : undefined;
      if (problem) {
        this.#report(connection, 'handshake_failed', problem);
        destroyAll(connection);
        return;
      }
      void this.#connectUpstream(connection, route).then((upstream) => {
        if (!upstream) {
          refuse(secure);
          return;
        }
        if (secure.destroyed) {
          upstream.destroy();
          return;
        }
        connection.streams.push(upstream);
        this.#report(connection, 'accepted');
        carry(connection, secure, upstream);
      });
    });
  }

  /** The agent stream, or undefined (reported as `no_session`) when no agent can take it. */
  async #connectUpstream(connection: Connection, route: TlsCarriedRoute): Promise<Duplex | undefined> {
    try {
      return await route.connect({ ip: connection.ip, port: connection.port });
    } catch (error) {
      this.#report(connection, 'no_session', describe(error));
      return undefined;
    }
  }

  /** The secure context of a route's certificate and settings, built once per distinct content. */
  #secureContext(route: TlsCarriedRoute): CachedContext {
    const minVersion = TLS_VERSIONS[route.minVersion ?? DEFAULT_MIN_VERSION];
    const certificate = route.certificate;
    if (!certificate)
      return { error: new Error(`edge ${route.edgeId} terminates TLS but has no certificate`) };
    const key = createHash('sha256')
      .update(JSON.stringify([certificate.cert, certificate.key, minVersion, route.clientCas ?? null]))
      .digest('base64url');
    const cached = this.#contexts.get(key);
    if (cached) {
      // Least recently used first: move it to the end.
      this.#contexts.delete(key);
      this.#contexts.set(key, cached);
      return cached;
    }
    let entry: CachedContext;
    try {
      entry = {
        context: tls.createSecureContext({
          cert: certificate.cert,
          key: certificate.key,
          minVersion,
          // Sessions resume only under the same settings; OpenSSL also refuses to resume at all
          // when client certificates are requested and no context is set (internal_error).
          sessionIdContext: key.slice(0, 32),
          // OpenSSL 3 refuses TLS 1.0 and 1.1 (SHA-1 signatures) at its default security level.
          ...((minVersion === 'TLSv1' || minVersion === 'TLSv1.1') && {
            ciphers: `${tls.DEFAULT_CIPHERS}:@SECLEVEL=0`,
          }),
          ...(route.clientCas !== undefined && { ca: route.clientCas }),
        }),
      };
    } catch (error) {
      // The message names the failing OpenSSL routine, never the PEM contents.
      entry = { error: new Error(`edge ${route.edgeId}: unusable certificate or key (${describe(error)})`) };
    }
    this.#contexts.set(key, entry);
    if (this.#contexts.size > MAX_SECURE_CONTEXTS) {
      const oldest = this.#contexts.keys().next().value;
      if (oldest !== undefined) this.#contexts.delete(oldest);
    }
    return entry;
  }
}

/**
 * Pipes both ways; either side failing tears both down, one side ending ends the other's writable
 * side only (half-close), and the sockets close once both directions are done.
 */
function carry(connection: Connection, client: Duplex, upstream: Duplex): void {
  const done = (error: Error | null | undefined) => {
    if (error) destroyAll(connection);
  };
  pipeline(client, upstream, done);
  pipeline(upstream, client, done);
}

/** Closes a connection refused before it was carried: our FIN (after `data`), then a bounded linger. */
function refuse(socket: Duplex, data?: Buffer): void {
  socket.resume();
  socket.end(data);
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}

function destroyAll(connection: Connection): void {
  for (const stream of connection.streams) stream.destroy();
}

/** A fatal TLS alert record, with the record version the client used. */
function alert(clientHello: Buffer, description: number): Buffer {
  return Buffer.from([0x15, clientHello[1] ?? 3, clientHello[2] ?? 1, 0x00, 0x02, 0x02, description]);
}

/**
 * OpenSSL's verdict on the client's certificate chain. Node applies it only to connections a
 * tls.Server accepts (after the handshake, as here); a TLSSocket made by hand must ask its handle.
 * If that internal method is ever missing, the client is refused: mutual TLS fails closed.
 */
function clientCertificateProblem(socket: tls.TLSSocket): string | undefined {
  const handle = (
    socket as unknown as { _handle?: { verifyError?: () => (Error & { code?: string }) | null } }
  )._handle;
  if (typeof handle?.verifyError !== 'function') return 'the client certificate could not be verified';
  const error = handle.verifyError();
  return error ? `client certificate rejected: ${error.code ?? error.message}` : undefined;
}

function plainIp(address: string | undefined): string | undefined {
  if (address?.startsWith('::ffff:') && net.isIPv4(address.slice(7))) return address.slice(7);
  return address;
}

function describe(error: unknown): string {
  if (error instanceof ClientHelloError) return error.message;
  if (error instanceof Error) {
    const code = (error as Error & { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
