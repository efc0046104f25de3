import { EventEmitter } from 'node:events';
import http2, { type ClientHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { AgentSession, type SessionInfo } from './agent-session.js';
import { type AgentHello, agentHello, TUNNEL_ALPN, TunnelPath } from './protocol.js';

/** Why an agent may not open a session; its message is sent to the agent. */
export class SessionRefused extends Error {}

export interface TunnelEndpointOptions {
  /** The edge's serving certificate and key (PEM). */
  tls: { key: string | Buffer; cert: string | Buffer };
  /**
   * Decides whether the agent may open a session: the credential its token names and a new session
   * id, or a `SessionRefused` whose message the agent is told. Never sees the token again afterwards.
   */
  authenticate(hello: AgentHello, ip: string): Promise<Omit<SessionInfo, 'hello' | 'ip' | 'startedAt'>>;
  /** How long an agent may take to say hello (ms). */
  helloTimeoutMs?: number;
}

const JSON_LIMIT_BYTES = 64 * 1024;

/**
 * Where agents dial in: a TLS listener (ALPN `edgeward-tunnel/1`) that turns each connection into
 * an HTTP/2 client session to the agent, asks it who it is, and keeps the sessions it accepts.
 * Emits `session` for each new one; a session emits `closed` when its agent goes.
 */
export class TunnelEndpoint extends EventEmitter<{
  session: [AgentSession];
  refused: [ip: string, reason: string];
}> {
  readonly #server: tls.Server;
  readonly #sessions = new Map<string, AgentSession>();

  constructor(private readonly options: TunnelEndpointOptions) {
    super();
    this.#server = tls.createServer({ ...options.tls, ALPNProtocols: [TUNNEL_ALPN] }, (socket) => {
      this.#accept(socket).catch((error: unknown) => {
        socket.destroy();
        const reason = error instanceof Error ? error.message : String(error);
        this.emit('refused', socket.remoteAddress ?? 'unknown', reason);
      });
    });
    // A client that fails the handshake (wrong protocol, bad TLS) never becomes a session.
    this.#server.on('tlsClientError', () => {});
  }

  async listen(port: number, host = '127.0.0.1'): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    return this.#server.address() as AddressInfo;
  }

  /** The sessions online now. */
  sessions(): AgentSession[] {
    return [...this.#sessions.values()];
  }

  session(id: string): AgentSession | undefined {
    return this.#sessions.get(id);
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const session of this.#sessions.values()) session.close('edge shutting down');
    await closed;
  }

  async #accept(socket: tls.TLSSocket): Promise<void> {
    if (socket.alpnProtocol !== TUNNEL_ALPN)
      throw new Error(`not a tunnel client (ALPN ${socket.alpnProtocol})`);
    const ip = normalizeIp(socket.remoteAddress);
    const h2 = http2.connect('http://agent', { createConnection: () => socket });
    h2.on('error', () => {}); // reported through the session's `closed`, or the failed hello below
    const hello = agentHello.parse(
      await requestJson(h2, TunnelPath.hello, undefined, this.options.helloTimeoutMs ?? 10_000),
    );
    let granted: Omit<SessionInfo, 'hello' | 'ip' | 'startedAt'>;
    try {
      granted = await this.options.authenticate(hello, ip);
    } catch (error) {
      if (error instanceof SessionRefused) await sendVerdict(h2, { error: error.message }).catch(() => {});
      h2.destroy();
      throw error;
    }
    const { authtoken: _secret, ...withoutToken } = hello;
    const session = new AgentSession({ ...granted, hello: withoutToken, ip, startedAt: new Date() }, h2);
    this.#sessions.set(session.id, session);
    session.once('closed', () => this.#sessions.delete(session.id));
    await sendVerdict(h2, { session_id: session.id });
    this.emit('session', session);
  }
}

function normalizeIp(address: string | undefined): string {
  if (!address) return 'unknown';
  return address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
}

async function sendVerdict(h2: ClientHttp2Session, verdict: { session_id: string } | { error: string }) {
  await requestJson(h2, TunnelPath.session, verdict, 10_000);
}

/** One request to the agent with an optional JSON body; resolves with its JSON answer (or null). */
function requestJson(
  h2: ClientHttp2Session,
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const stream = h2.request({ ':method': 'POST', ':path': path, 'content-type': 'application/json' });
    const timer = setTimeout(() => {
      stream.close();
      reject(new Error(`the agent did not answer ${path} within ${timeoutMs} ms`));
    }, timeoutMs);
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > JSON_LIMIT_BYTES) stream.close();
    });
    stream.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`${path} failed`, { cause: error }));
    });
    stream.once('end', () => {
      clearTimeout(timer);
      try {
        resolve(text === '' ? null : JSON.parse(text));
      } catch (error) {
        reject(new Error(`${path}: the agent's answer is not JSON`, { cause: error }));
      }
    });
    stream.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
