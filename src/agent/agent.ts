import { EventEmitter } from 'node:events';
import http2, { type ServerHttp2Stream } from 'node:http2';
import { platform } from 'node:os';
import { pipeline } from 'node:stream';
import tls from 'node:tls';
import {
  type AgentHello,
  type SessionVerdict,
  sessionVerdict,
  TUNNEL_ALPN,
  TunnelPath,
} from '../edge/tunnel/protocol.js';
import { dialTarget, type ForwardTarget } from './forward-target.js';
import { reconnectDelayMs } from './reconnect.js';

export interface AgentOptions {
  /** `host:port` of the edge's tunnel endpoint. */
  edgeAddr: string;
  authtoken: string;
  labels: Record<string, string>;
  forward: ForwardTarget;
  metadata?: string;
  agentVersion: string;
  /** PEM of the CA that signed the edge's certificate; the system's CAs when absent. */
  ca?: string | Buffer;
  /** The name the edge's certificate is checked against; the edge's host by default. */
  serverName?: string;
}

type AgentEvents = {
  /** A session opened; its id is what the API lists. */
  session: [id: string];
  /** The edge refused the session (a bad token, a bind the ACL does not allow). */
  refused: [reason: string];
  /** The connection to the edge ended; the agent reconnects after `delayMs` unless stopped. */
  disconnected: [reason: string, delayMs: number];
};

/**
 * `edgeward agent`: dials the edge over TLS and serves HTTP/2 on that connection, so the edge can
 * open a stream per connection it carries; each stream is piped to the forward target. Reconnects
 * with exponential backoff and full jitter; each connection is a new session with a new id.
 */
export class Agent extends EventEmitter<AgentEvents> {
  #stopped = false;
  #socket: tls.TLSSocket | undefined;
  #timer: NodeJS.Timeout | undefined;
  #attempt = 0;
  #sessionId: string | undefined;

  constructor(private readonly options: AgentOptions) {
    super();
  }

  /** The id of the session open now, if any. */
  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  start(): void {
    this.#stopped = false;
    this.#connect();
  }

  /** Closes the connection and stops reconnecting. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#socket?.destroy();
  }

  #hello(): AgentHello {
    return {
      authtoken: this.options.authtoken,
      agent_version: this.options.agentVersion,
      os: platform(),
      labels: this.options.labels,
      ...(this.options.metadata === undefined ? {} : { metadata: this.options.metadata }),
    };
  }

  #connect(): void {
    const [host, portText] = splitHostPort(this.options.edgeAddr);
    const socket = tls.connect({
      host,
      port: Number(portText),
      servername: this.options.serverName ?? host,
      ALPNProtocols: [TUNNEL_ALPN],
      ...(this.options.ca ? { ca: this.options.ca } : {}),
    });
    this.#socket = socket;
    let reason = 'connection closed';
    socket.once('secureConnect', () => {
      const server = http2.createServer();
      server.on('stream', (stream, headers) => this.#onStream(stream, String(headers[':path'])));
      server.on('sessionError', (error: Error) => {
        reason = error.message;
      });
      server.emit('connection', socket);
    });
    socket.on('error', (error: Error) => {
      reason = error.message;
    });
    socket.once('close', () => {
      this.#sessionId = undefined;
      if (this.#stopped) return;
      const delayMs = reconnectDelayMs(this.#attempt++);
      this.emit('disconnected', reason, delayMs);
      this.#timer = setTimeout(() => this.#connect(), delayMs);
    });
  }

  #onStream(stream: ServerHttp2Stream, path: string): void {
    stream.on('error', () => {}); // a reset stream is one carried connection ending, not the session
    if (path === TunnelPath.hello) {
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      stream.end(JSON.stringify(this.#hello()));
    } else if (path === TunnelPath.session) {
      readJson(stream).then(
        (body) => this.#onVerdict(sessionVerdict.parse(body), stream),
        () => stream.close(http2.constants.NGHTTP2_PROTOCOL_ERROR),
      );
    } else if (path === TunnelPath.connect) {
      this.#carry(stream);
    } else {
      stream.respond({ ':status': 404 });
      stream.end();
    }
  }

  #onVerdict(verdict: SessionVerdict, stream: ServerHttp2Stream): void {
    stream.respond({ ':status': 204 });
    stream.end();
    if ('error' in verdict) {
      // Retrying with the same token and labels would be refused again: stop, and say why.
      this.stop();
      this.emit('refused', verdict.error);
      return;
    }
    this.#attempt = 0;
    this.#sessionId = verdict.session_id;
    this.emit('session', verdict.session_id);
  }

  #carry(stream: ServerHttp2Stream): void {
    dialTarget(this.options.forward).then(
      (target) => {
        stream.respond({ ':status': 200 });
        // Either side ending ends the other; HTTP/2 flow control paces both directions.
        pipeline(stream, target, stream, () => {
          target.destroy();
        });
      },
      () => {
        stream.respond({ ':status': 502 });
        stream.end();
      },
    );
  }
}

function splitHostPort(address: string): [string, string] {
  const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  if (!match?.[1] || !match[2]) throw new Error(`--edge-addr: '${address}' is not host:port`);
  return [match[1], match[2]];
}

function readJson(stream: ServerHttp2Stream): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      text += chunk;
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
