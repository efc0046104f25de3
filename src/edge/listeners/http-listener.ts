import http from 'node:http';
import type net from 'node:net';

/** Where ACME CAs fetch HTTP-01 answers (RFC 8555 §8.3). */
const CHALLENGE_PREFIX = '/.well-known/acme-challenge/';
/** A token is base64url (RFC 8555 §8.1): anything else is not a challenge of ours. */
const TOKEN = /^[A-Za-z0-9_-]{1,255}$/;

export interface HttpListenerOptions {
  /** The key authorization of a pending HTTP-01 challenge, by token. */
  acmeAnswer(token: string): string | undefined;
  /** The public HTTPS port redirects point at (443, the default, is left out of the URL). */
  httpsPort?: number;
  /** Time to receive a request's head; a client that trickles it is cut (slowloris). Default 20 s. */
  headerTimeoutMs?: number;
  /** Time a kept-alive connection may sit idle. Default 5 s. */
  idleTimeoutMs?: number;
  /** Counts what was answered: `challenge`, `redirect`, `not_found` (an unknown challenge token). */
  onAnswer?(outcome: 'challenge' | 'redirect' | 'not_found'): void;
}

/**
 * The edges' plain-HTTP listener (`--http-addr`, port 80 in production): answers ACME HTTP-01
 * challenges, and sends everything else to the same URL over HTTPS (308 keeps the method and body).
 * It never reaches an agent: nothing leaves the edge in cleartext.
 */
export class HttpListener {
  readonly #server: http.Server;

  constructor(private readonly options: HttpListenerOptions) {
    const headerTimeoutMs = options.headerTimeoutMs ?? 20_000;
    this.#server = http.createServer(
      {
        headersTimeout: headerTimeoutMs,
        requestTimeout: headerTimeoutMs + 10_000,
        keepAliveTimeout: options.idleTimeoutMs ?? 5_000,
        // No request here has a use for a large head.
        maxHeaderSize: 8 * 1024,
      },
      (request, response) => this.#answer(request, response),
    );
    this.#server.on('clientError', (_error, socket) => {
      if (socket.writable)
        socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      else socket.destroy();
    });
  }

  listen(port: number, host: string): Promise<net.AddressInfo> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject);
        resolve(this.#server.address() as net.AddressInfo);
      });
    });
  }

  /** Stops accepting, and closes kept-alive connections (nothing here is long-lived). */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  #answer(request: http.IncomingMessage, response: http.ServerResponse): void {
    const target = request.url ?? '/';
    if (target.startsWith(CHALLENGE_PREFIX)) {
      const token = target.slice(CHALLENGE_PREFIX.length);
      const answer = TOKEN.test(token) ? this.options.acmeAnswer(token) : undefined;
      if (answer !== undefined && (request.method === 'GET' || request.method === 'HEAD')) {
        this.options.onAnswer?.('challenge');
        response.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': Buffer.byteLength(answer),
        });
        response.end(request.method === 'HEAD' ? undefined : answer);
        return;
      }
      this.options.onAnswer?.('not_found');
      response.writeHead(404, { 'content-type': 'text/plain', 'content-length': 22 });
      response.end('no pending challenge\r\n');
      return;
    }
    const host = hostOfHeader(request.headers.host);
    if (host === undefined || !target.startsWith('/')) {
      response.writeHead(400, { 'content-type': 'text/plain', connection: 'close' });
      response.end('a request needs a Host and a path\r\n');
      return;
    }
    this.options.onAnswer?.('redirect');
    const port = this.options.httpsPort ?? 443;
    const location = `https://${host}${port === 443 ? '' : `:${port}`}${target}`;
    response.writeHead(308, { location, 'content-length': 0 });
    response.end();
  }
}

/** The host of a Host header without its port (an IPv6 literal keeps its brackets); undefined when unusable. */
function hostOfHeader(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::\d{1,5})?$/.exec(header.trim());
  return match?.[1]?.toLowerCase();
}
