import { EventEmitter } from 'node:events';
import http2, { type ClientHttp2Session } from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import {
  type AgentHello,
  agentHello,
  agentHelloV2,
  type LiveEdge,
  type SessionLivenessSettings,
  type SessionVerdictV2,
  TUNNEL_ALPN,
  TUNNEL_ALPN_V2,
  TUNNEL_ALPNS,
  TUNNEL_WINDOW_BYTES,
  TunnelPath,
} from '../../schemas/tunnel-protocol.js';
import { PerSourceLimit, type ReleaseSlot } from '../listeners/per-source-limit.js';
import { type DropKind, UNAUTHENTICATED_DEFAULTS } from '../listeners/unauthenticated-limits.js';
import { AgentSession } from './agent-session.js';
import { AgentAnswerTimeout, answerJson, requestAgent } from './request.js';

/** Why an agent may not open a session; its message is sent to the agent. */
export class SessionRefused extends Error {}

export interface TunnelEndpointOptions {
  /** The edge's serving certificate and key (PEM). */
  tls: { key: string | Buffer; cert: string | Buffer };
  /**
   * Another certificate for the name an agent dials (SNI), e.g. an agent ingress's, issued by ACME;
   * undefined: the serving certificate above.
   */
  certificateFor?(serverName: string): { cert: string; key: string } | undefined;
  /** This edge's id, told to version 2 agents (which hold one session per edge). */
  edgeId?: string;
  /** The live edges, told to version 2 agents with their verdict. */
  liveEdges?(): LiveEdge[];
  /**
   * Decides whether the agent may open a session: the credential its token names and a new session
   * id, or a `SessionRefused` whose message the agent is told. Never sees the token again afterwards.
   */
  authenticate(hello: AgentHello, ip: string): Promise<SessionGrant>;
  /** How long an agent may take to say hello once the TLS handshake is done (ms, default 10 s). */
  helloTimeoutMs?: number;
  /** How sessions' agents are pinged and when they leave rotation or are closed (`SESSION_LIVENESS`). */
  liveness?: Partial<SessionLivenessSettings>;
  /** How long the TLS handshake may take from accept (ms, default 10 s). */
  handshakeTimeoutMs?: number;
  /**
   * How many connections one source address may hold in their TLS handshake or hello at once
   * (default 16); one more is closed at once. Sessions do not count.
   */
  maxUnauthenticatedPerSource?: number;
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

const DEFAULT_HELLO_TIMEOUT_MS = 10_000;

/** How long an agent told `already_held` has to close the connection before the edge does. */
const ALREADY_HELD_CLOSE_MS = 2_000;

/** TCP keepalive on agent connections: the kernel probes a connection idle this long (ms). */
const TCP_KEEPALIVE_DELAY_MS = 30_000;

/** A connection that has not become a session yet: it holds a slot of its source address. */
interface Unauthenticated {
  ip: string;
  release: ReleaseSlot;
  timer?: NodeJS.Timeout;
  /** Why the edge ended it, when it did; reported as `dropped` once the socket closes. */
  failure?: { kind: DropKind; reason: string };
  /** The agent said hello: what happens next is a session or a `refused`, not a `dropped`. */
  saidHello: boolean;
}

/**
 * Where agents dial in: a TLS listener (ALPN `edgeward-tunnel/1`) that turns each connection into
 * an HTTP/2 client session to the agent, asks it who it is, and keeps the sessions it accepts.
 * Emits `session` for each new one (a session emits `closed` when its agent goes), `refused` for an
 * agent that said hello and was refused, and `dropped` for a connection that never got as far: over
 * the per-source limit, a TLS handshake that failed or took too long, no hello in time.
 */
export class TunnelEndpoint extends EventEmitter<{
  session: [AgentSession];
  refused: [ip: string, reason: string];
  dropped: [ip: string, kind: DropKind, reason: string];
}> {
  /** Accepts TCP connections, so that each is counted and timed before TLS starts. */
  readonly #listener: net.Server;
  /** Runs TLS on the connections the listener hands it; it listens on nothing itself. */
  readonly #tls: tls.Server;
  readonly #sessions = new Map<string, AgentSession>();
  /** Every agent connection, a session or not yet (or no longer) one: closing the endpoint ends them all. */
  readonly #sockets = new Set<net.Socket>();
  /** Each connection's admission state, by its addresses (how a TLS socket finds its TCP connection). */
  readonly #connections = new Map<string, Unauthenticated>();
  readonly #perSource: PerSourceLimit;
  readonly #handshakeTimeoutMs: number;

  constructor(private readonly options: TunnelEndpointOptions) {
    super();
    this.#handshakeTimeoutMs = options.handshakeTimeoutMs ?? UNAUTHENTICATED_DEFAULTS.handshakeTimeoutMs;
    this.#perSource = new PerSourceLimit(
      options.maxUnauthenticatedPerSource ?? UNAUTHENTICATED_DEFAULTS.maxPerSource,
    );
    this.#tls = tls.createServer(
      // Node's own handshake timer restarts with every byte and only reports (it never closes the
      // socket); the timer of `#onConnection` runs from accept and closes it.
      {
        ...options.tls,
        ALPNProtocols: TUNNEL_ALPNS,
        handshakeTimeout: this.#handshakeTimeoutMs,
        SNICallback: (serverName, done) => done(null, this.#contextFor(serverName)),
      },
      (socket) => this.#onSecure(socket),
    );
    // Node leaves a socket whose handshake failed (or timed out) open: close it, and say why.
    this.#tls.on('tlsClientError', (error, socket) => {
      const pending = this.#connections.get(connectionKey(socket));
      if (pending) pending.failure ??= tlsFailure(error, this.#handshakeTimeoutMs);
      socket.destroy();
    });
    this.#listener = net.createServer((socket) => this.#onConnection(socket));
  }

  /** The secure context of the name's own certificate, if there is one; a bad pair falls back to the serving one. */
  #contextFor(serverName: string): tls.SecureContext | undefined {
    const certificate = this.options.certificateFor?.(serverName);
    if (!certificate) return undefined;
    let context = this.#sniContexts.get(certificate.cert);
    if (!context) {
      try {
        context = tls.createSecureContext({ ...this.options.tls, ...certificate });
      } catch {
        return undefined;
      }
      this.#sniContexts.set(certificate.cert, context);
      // Renewals replace certificates: keep the recent ones only.
      if (this.#sniContexts.size > 64)
        this.#sniContexts.delete(this.#sniContexts.keys().next().value as string);
    }
    return context;
  }

  readonly #sniContexts = new Map<string, tls.SecureContext>();

  /**
   * Serves `certificate` to the handshakes from now on; sessions already up keep theirs. Throws
   * (and changes nothing) when the key does not match the certificate or either does not parse.
   */
  setCertificate(certificate: { cert: string; key: string }): void {
    this.#tls.setSecureContext({ ...this.options.tls, ...certificate });
  }

  async listen(port: number, host = '127.0.0.1'): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.#listener.once('error', reject);
      this.#listener.listen(port, host, () => {
        this.#listener.off('error', reject);
        resolve();
      });
    });
    return this.#listener.address() as AddressInfo;
  }

  /** The sessions online now. */
  sessions(): AgentSession[] {
    return [...this.#sessions.values()];
  }

  session(id: string): AgentSession | undefined {
    return this.#sessions.get(id);
  }

  /** Takes no new agent connection (a draining edge); the sessions carry on until `close`. */
  stopAccepting(): void {
    if (this.#listener.listening) this.#listener.close();
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) =>
      this.#listener.listening ? this.#listener.close(() => resolve()) : resolve(),
    );
    for (const session of this.#sessions.values()) session.close('edge shutting down');
    // A connection whose session already ended (its agent went away) may linger half-closed with
    // streams in flight; `server.close()` would wait for it forever.
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }

  #onConnection(socket: net.Socket): void {
    const admitted = this.#perSource.admit(socket, (ip, reason) =>
      this.emit('dropped', ip, 'per_source_limit', reason),
    );
    if (!admitted) return;
    const { ip, release } = admitted;
    const pending: Unauthenticated = { ip, release, saidHello: false };
    const key = connectionKey(socket);
    this.#connections.set(key, pending);
    this.#sockets.add(socket);
    // The TLS socket reports errors; this one (whose handle TLS took over) only closes.
    socket.on('error', () => {});
    socket.once('close', () => {
      clearTimeout(pending.timer);
      release();
      this.#connections.delete(key);
      this.#sockets.delete(socket);
      if (pending.saidHello) return;
      const { kind, reason } = pending.failure ?? {
        kind: 'closed',
        reason: 'the client closed the connection before saying hello',
      };
      this.emit('dropped', ip, kind, reason);
    });
    // A peer that vanished (power cut, NAT entry gone) is noticed by the kernel, not only by HTTP/2.
    socket.setKeepAlive(true, TCP_KEEPALIVE_DELAY_MS);
    pending.timer = setTimeout(() => {
      pending.failure ??= {
        kind: 'handshake_timeout',
        reason: `the TLS handshake did not finish within ${this.#handshakeTimeoutMs} ms`,
      };
      socket.destroy();
    }, this.#handshakeTimeoutMs);
    this.#tls.emit('connection', socket);
  }

  #onSecure(socket: tls.TLSSocket): void {
    const pending = this.#connections.get(connectionKey(socket));
    if (!pending) {
      // Its TCP connection closed while the handshake finished: nothing left to serve.
      socket.destroy();
      return;
    }
    // The handshake is done; the hello has its own timeout.
    clearTimeout(pending.timer);
    this.#accept(socket, pending).catch((error: unknown) => {
      if (pending.saidHello) this.emit('refused', pending.ip, messageOf(error));
      else
        pending.failure ??= {
          kind: error instanceof AgentAnswerTimeout ? 'auth_timeout' : 'handshake_failed',
          reason: messageOf(error),
        };
      socket.destroy();
    });
  }

  async #accept(socket: tls.TLSSocket, pending: Unauthenticated): Promise<void> {
    const protocol = socket.alpnProtocol === TUNNEL_ALPN_V2 ? 2 : socket.alpnProtocol === TUNNEL_ALPN ? 1 : 0;
    if (protocol === 0) throw new Error(`not a tunnel client (ALPN ${socket.alpnProtocol})`);
    const { ip } = pending;
    const h2 = http2.connect('http://agent', {
      createConnection: () => socket,
      settings: { initialWindowSize: TUNNEL_WINDOW_BYTES },
    });
    h2.once('connect', () => h2.setLocalWindowSize(TUNNEL_WINDOW_BYTES));
    h2.on('error', () => {}); // reported through the session's `closed`, or the failed hello below
    const said = await requestJson(
      h2,
      TunnelPath.hello,
      undefined,
      this.options.helloTimeoutMs ?? DEFAULT_HELLO_TIMEOUT_MS,
    );
    const hello: AgentHello & { held_edge_ids?: string[] | undefined } =
      protocol === 2 ? agentHelloV2.parse(said) : agentHello.parse(said);
    pending.saidHello = true;
    let granted: SessionGrant;
    try {
      granted = await this.options.authenticate(hello, ip);
    } catch (error) {
      if (error instanceof SessionRefused) await sendVerdict(h2, { error: error.message }).catch(() => {});
      h2.destroy();
      throw error;
    }
    const { edgeId } = this.options;
    if (edgeId !== undefined && hello.held_edge_ids?.includes(edgeId)) {
      // The agent holds a session here already (it came back through the shared address): no
      // second one; it tries another edge. Its token was checked like any other's; the edge ends
      // the connection itself, and the slot is held until it has.
      await sendVerdict(h2, { already_held: edgeId });
      h2.close();
      setTimeout(() => socket.destroy(), ALREADY_HELD_CLOSE_MS).unref();
      return;
    }
    // An authenticated agent no longer counts against its address's limit.
    pending.release();
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
      this.options.liveness,
      protocol,
    );
    this.#sessions.set(session.id, session);
    session.once('closed', () => this.#sessions.delete(session.id));
    await this.options.register?.(session);
    await sendVerdict(
      h2,
      protocol === 2 && edgeId !== undefined
        ? { session_id: session.id, edge_id: edgeId, edges: this.options.liveEdges?.() ?? [] }
        : { session_id: session.id },
    );
    this.emit('session', session);
  }
}

/** Identifies a connection by its addresses; the raw socket and its TLS socket report the same ones. */
function connectionKey(socket: net.Socket): string {
  return `${socket.remoteAddress}|${socket.remotePort}|${socket.localAddress}|${socket.localPort}`;
}

/** What a TLS error before the handshake finished says, for `dropped`. */
function tlsFailure(
  error: Error & { code?: string; reason?: string },
  timeoutMs: number,
): { kind: DropKind; reason: string } {
  if (error.code === 'ERR_TLS_HANDSHAKE_TIMEOUT')
    return { kind: 'handshake_timeout', reason: `the TLS handshake was idle for ${timeoutMs} ms` };
  if (error.code === 'ECONNRESET')
    return { kind: 'closed', reason: 'the client closed the connection during the TLS handshake' };
  // OpenSSL's reason ('wrong version number', 'http request') says it; its message adds source paths.
  return { kind: 'handshake_failed', reason: `TLS handshake failed: ${error.reason ?? error.message}` };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function sendVerdict(h2: ClientHttp2Session, verdict: SessionVerdictV2 | { session_id: string }) {
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
