import { EventEmitter } from 'node:events';
import http2, { type ClientHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import {
  type AgentHello,
  agentHello,
  TUNNEL_ALPN,
  TUNNEL_WINDOW_BYTES,
  TunnelPath,
} from '../../schemas/tunnel-protocol.js';
import { AgentSession } from './agent-session.js';
import { answerJson, requestAgent } from './request.js';

/** Why an agent may not open a session; its message is sent to the agent. */
export class SessionRefused extends Error {}

export interface TunnelEndpointOptions {
  /** The edge's serving certificate and key (PEM). */
  tls: { key: string | Buffer; cert: string | Buffer };
  /**
   * Decides whether the agent may open a session: the credential its token names and a new session
   * id, or a `SessionRefused` whose message the agent is told. Never sees the token again afterwards.
   */
  authenticate(hello: AgentHello, ip: string): Promise<SessionGrant>;
  /** How long an agent may take to say hello (ms). */
  helloTimeoutMs?: number;
  /**
   * Runs before the agent is told its session id, so that by the time an agent reports "online"
   * the session is known where it must be (the control plane's list).
   */
  register?(session: AgentSession): Promise<void>;
}

/** What `authenticate` grants: the new session's id and the credential the token names. */
export interface SessionGrant {
  id: string;
  credentialId: string;
}

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
  /** Every agent connection, a session or not yet (or no longer) one: closing the endpoint ends them all. */
  readonly #sockets = new Set<tls.TLSSocket>();

  constructor(private readonly options: TunnelEndpointOptions) {
    super();
    this.#server = tls.createServer({ ...options.tls, ALPNProtocols: [TUNNEL_ALPN] }, (socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
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
    // A connection whose session already ended (its agent went away) may linger half-closed with
    // streams in flight; `server.close()` would wait for it forever.
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }

  async #accept(socket: tls.TLSSocket): Promise<void> {
    if (socket.alpnProtocol !== TUNNEL_ALPN)
      throw new Error(`not a tunnel client (ALPN ${socket.alpnProtocol})`);
    const ip = normalizeIp(socket.remoteAddress);
    const h2 = http2.connect('http://agent', {
      createConnection: () => socket,
      settings: { initialWindowSize: TUNNEL_WINDOW_BYTES },
    });
    h2.once('connect', () => h2.setLocalWindowSize(TUNNEL_WINDOW_BYTES));
    h2.on('error', () => {}); // reported through the session's `closed`, or the failed hello below
    const hello = agentHello.parse(
      await requestJson(h2, TunnelPath.hello, undefined, this.options.helloTimeoutMs ?? 10_000),
    );
    let granted: SessionGrant;
    try {
      granted = await this.options.authenticate(hello, ip);
    } catch (error) {
      if (error instanceof SessionRefused) await sendVerdict(h2, { error: error.message }).catch(() => {});
      h2.destroy();
      throw error;
    }
    // The token goes no further than `authenticate`.
    const session = new AgentSession(
      {
        id: granted.id,
        credentialId: granted.credentialId,
        transport: 'svc/2',
        agentVersion: hello.agent_version,
        os: hello.os,
        metadata: hello.metadata,
        labels: hello.labels,
        ip,
        startedAt: new Date(),
      },
      h2,
    );
    this.#sessions.set(session.id, session);
    session.once('closed', () => this.#sessions.delete(session.id));
    await this.options.register?.(session);
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
async function requestJson(
  h2: ClientHttp2Session,
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<unknown> {
  return answerJson(path, await requestAgent(h2, path, body, timeoutMs));
}
