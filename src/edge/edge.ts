import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { newId } from '../crypto/ids.js';
import { hashToken } from '../crypto/tokens.js';
import { isSpecificHost, joinHostPort } from '../lib/listen-address.js';
import type { EdgeCommand, EdgeConfig } from '../schemas/edge-config.js';
import type { SessionLivenessSettings } from '../schemas/tunnel-protocol.js';
import { AcmeChallenges } from './acme-challenges.js';
import { ControlPlaneClient } from './control-plane/control-plane-client.js';
import { EdgeCertificates } from './edge-certificates.js';
import { EdgeMetrics } from './edge-metrics.js';
import { HttpsFront } from './https/https-front.js';
import { HttpsRouteTable } from './https/https-routes.js';
import { HttpListener } from './listeners/http-listener.js';
import { TcpListeners } from './listeners/tcp-listeners.js';
import { type TlsEdgeEvent, TlsEdgeListener, type TlsRoute } from './listeners/tls-listener.js';
import type { UnauthenticatedLimits } from './listeners/unauthenticated-limits.js';
import { PeerDirectory } from './relay/peer-directory.js';
import { RelayClient } from './relay/relay-client.js';
import { RelayEndpoint } from './relay/relay-endpoint.js';
import { refusedBinds } from './routing/acl.js';
import { normalizeIp } from './routing/ip-policy.js';
import { SessionPool } from './routing/session-pool.js';
import type { TunnelSession } from './routing/tunnel-session.js';
import { SshEndpoint } from './ssh/ssh-endpoint.js';
import { TcpRoutes } from './tcp-routes.js';
import { TlsRoutes } from './tls-routes.js';
import { SessionRefused, TunnelEndpoint } from './tunnel/tunnel-endpoint.js';

export interface EdgeOptions {
  /** The control plane, e.g. `http://127.0.0.1:4040`, or several replicas of it (tried in turn). */
  apiUrl: string | readonly string[];
  /** `EDGEWARD_EDGE_KEY`. */
  edgeKey: string;
  /** Default: a random id per process. */
  edgeId?: string;
  /** The region this edge serves: reserved addresses of other regions are not its to serve. */
  region: string;
  /** Where agents connect, with the certificate they verify. */
  tunnel: { host: string; port: number; tls: { cert: string; key: string } };
  /** The public TLS listener of TLS edges (routed by SNI); none disables it. */
  tls?: { host: string; port: number } | undefined;
  /**
   * The plain-HTTP listener: ACME HTTP-01 answers, and redirects to HTTPS on `httpsPort` (default
   * 443); none disables it.
   */
  http?: { host: string; port: number; httpsPort?: number | undefined } | undefined;
  /** Where OpenSSH clients open tunnels, with the edge's host keys; none disables SSH. */
  ssh?: { host: string; port: number; hostKeys: string[] } | undefined;
  /** The interface TCP edges' ports are opened on. */
  tcpHost: string;
  /** Ports of reserved addresses this edge serves. */
  tcpPortRange: { min: number; max: number };
  logger: Logger;
  /** Extra CA certificates (PEM) trusted when HTTPS routes call identity providers (OAuth, OIDC). */
  identityProviderCas?: string[] | undefined;
  /** How long SIGTERM waits for carried connections before cutting them. */
  drainTimeoutMs?: number;
  /**
   * How long SIGTERM keeps serving with `/readyz` failing before it stops accepting, so a load
   * balancer's checks (or Kubernetes' endpoints) take the edge out of rotation first.
   */
  drainDelayMs?: number;
  /** Where other edges pass connections for sessions held here; none: this edge neither serves nor uses relays. */
  relay?: { host: string; port: number } | undefined;
  /** Addresses told to the control plane: where agents (`tunnelAddr`) and other edges (`relayAddr`) reach this edge. */
  advertise?: { tunnelAddr?: string | undefined; relayAddr?: string | undefined };
  /** Handshake and authentication timeouts, per-source limit of the tunnel and SSH endpoints. */
  unauthenticatedLimits?: UnauthenticatedLimits | undefined;
  /** How sessions' agents are pinged, and when they leave rotation or are closed (`SESSION_LIVENESS`). */
  sessionLiveness?: Partial<SessionLivenessSettings> | undefined;
  /** HTTPS clients' timeouts and header-field limit; the defaults of `DEFAULT_HTTPS_CLIENT_LIMITS` otherwise. */
  httpsClientLimits?: ConstructorParameters<typeof HttpsFront>[4];
}

/** How long a new session's agent waits for the control plane to hear of it before being told its id. */
const REPORT_WAIT_MS = 2000;

/** How long an unknown token waits for a configuration that may bring its credential. */
const UNKNOWN_TOKEN_GRACE_MS = 1500;

/**
 * `edgeward edge`: the data plane. Takes its configuration from the control plane's feed, admits
 * agents (tunnel credentials and their ACLs), reports their sessions and relays their commands;
 * TCP, TLS and HTTPS edges' connections are routed by `TcpRoutes`, `TlsRoutes` and `HttpsFront`.
 */
export class Edge {
  readonly id: string;
  readonly metrics = new EdgeMetrics();
  readonly pool = new SessionPool();
  readonly #controlPlane: ControlPlaneClient;
  readonly #relayClient: RelayClient;
  readonly #peers: PeerDirectory;
  readonly #relay: RelayEndpoint | undefined;
  readonly #tunnel: TunnelEndpoint;
  readonly #tcp: TcpListeners;
  readonly #ssh: SshEndpoint | undefined;
  readonly #tlsRoutes: TlsRoutes;
  readonly #tcpRoutes: TcpRoutes;
  readonly #certificates: EdgeCertificates;
  readonly #httpsRoutes: HttpsRouteTable;
  readonly #https: HttpsFront;
  /** Seals OAuth/OIDC session cookies: derived from the edge key, so every edge opens them. */
  readonly #cookieKey: Buffer;
  readonly #tls: TlsEdgeListener | undefined;
  readonly #acmeChallenges = new AcmeChallenges();
  readonly #http: HttpListener | undefined;
  readonly #log: Logger;
  #config: EdgeConfig | undefined;
  readonly #configWaiters = new Set<() => void>();
  #feedOpen = false;
  /** Draining: a configuration arriving now must not open listeners again. */
  #stopping = false;
  #firstConfig: Promise<void>;
  #resolveFirstConfig!: () => void;

  constructor(private readonly options: EdgeOptions) {
    this.id = options.edgeId ?? `edge_${randomBytes(8).toString('hex')}`;
    this.#log = options.logger.child({ edgeProcessId: this.id });
    this.#firstConfig = new Promise((resolve) => {
      this.#resolveFirstConfig = resolve;
    });
    this.#controlPlane = new ControlPlaneClient({
      apiUrls: typeof options.apiUrl === 'string' ? [options.apiUrl] : options.apiUrl,
      edgeKey: options.edgeKey,
      edgeId: this.id,
      region: options.region,
      advertise: () => this.#advertised(),
    });
    this.#relayClient = new RelayClient(options.edgeKey);
    this.#peers = new PeerDirectory(this.id, this.#relayClient);
    this.pool.setRemote(this.#peers);
    if (options.relay) {
      this.#relay = new RelayEndpoint({
        edgeKey: options.edgeKey,
        localSession: (id) => {
          const session = this.pool.get(id);
          return session && !session.closed && !session.draining ? session : undefined;
        },
        onRelayed: (outcome) => this.metrics.relayed.inc({ outcome }),
      });
    }
    const limits = options.unauthenticatedLimits ?? {};
    // Debug only: anyone can make these, and a flood of them must not flood the log.
    const logDropped = (endpoint: string) => (ip: string, kind: string, reason: string) =>
      this.#log.debug({ endpoint, ip, kind, reason }, 'connection closed before it authenticated');
    this.#tunnel = new TunnelEndpoint({
      tls: options.tunnel.tls,
      certificateFor: (serverName) => this.#certificates.forAgentIngress(serverName),
      edgeId: this.id,
      liveEdges: () => this.#peers.liveEdges(),
      authenticate: async (hello, ip) => {
        // Before the first configuration no credential is known: refusing would stop the agent for good.
        await this.#firstConfig;
        return this.#admit({
          credential: await this.#credentialOfToken(hello.authtoken),
          labels: hello.labels,
          ip,
        });
      },
      register: (session) => this.#onSession(session),
      // The agent's hello gets as long again as its TLS handshake.
      handshakeTimeoutMs: limits.handshakeTimeoutMs,
      helloTimeoutMs: limits.handshakeTimeoutMs,
      maxUnauthenticatedPerSource: limits.maxPerSource,
      liveness: options.sessionLiveness,
    });
    this.#tunnel.on('dropped', logDropped('tunnel'));
    if (options.ssh) {
      this.#ssh = new SshEndpoint({
        hostKeys: options.ssh.hostKeys,
        authenticate: async (key) => {
          const credential = this.#sshCredentialOfKey(key.data);
          return credential ? { credentialId: credential.id } : undefined;
        },
        openSession: async (request) => {
          const credential = this.#config?.ssh_credentials.find(
            (candidate) => candidate.id === request.credentialId,
          );
          if (!credential) throw new SessionRefused('the SSH credential was deleted');
          return this.#admit({ credential, labels: request.labels, ip: request.ip });
        },
        handshakeTimeoutMs: limits.handshakeTimeoutMs,
        authTimeoutMs: limits.sshAuthTimeoutMs,
        maxUnauthenticatedPerSource: limits.maxPerSource,
        liveness: options.sessionLiveness,
      });
      this.#ssh.on('dropped', logDropped('ssh'));
    }
    this.#certificates = new EdgeCertificates(this.#log);
    this.#tlsRoutes = new TlsRoutes(this.pool, this.#certificates, this.#log);
    this.#cookieKey = createHmac('sha256', options.edgeKey).update('edgeward https session cookies').digest();
    this.#httpsRoutes = new HttpsRouteTable((route) =>
      this.#log.error(
        { edgeId: route.edgeId, routeId: route.id, problem: route.problem },
        'HTTPS route configuration unreadable: the route answers 503 until it is fixed',
      ),
    );
    this.#https = new HttpsFront(
      this.#httpsRoutes,
      this.pool,
      this.metrics,
      this.#log,
      options.httpsClientLimits,
    );
    if (options.tls) {
      this.#tls = new TlsEdgeListener({
        resolve: async (serverName, ip, port) =>
          (await this.#tlsRoutes.resolve(serverName, ip, port)) ?? this.#httpsRoute(serverName),
        onEvent: (event) => this.#onTlsEvent(event),
        onError: (error) => this.#log.error({ err: error }, 'TLS edge listener error'),
        acmeChallengeCertificate: (serverName) => this.#acmeChallenges.alpnCertificate(serverName),
      });
    }
    if (options.http) {
      this.#http = new HttpListener({
        acmeAnswer: (token) => this.#acmeChallenges.httpAnswer(token),
        httpsPort: options.http.httpsPort,
        onAnswer: (outcome) => this.metrics.connections.inc({ edge_id: 'none', outcome: `http_${outcome}` }),
      });
    }
    this.#tcpRoutes = new TcpRoutes(this.pool, this.metrics, this.#log, {
      region: options.region,
      portRange: options.tcpPortRange,
    });
    this.#tcp = new TcpListeners(options.tcpHost, (port, socket) => this.#tcpRoutes.serve(port, socket), {
      listening: (port) => this.#log.info({ port }, 'TCP edge port open'),
      failed: (port, error) => this.#log.error({ port, err: error }, 'TCP edge port could not be opened'),
      stopped: (port) => this.#log.info({ port }, 'TCP edge port closed'),
    });
  }

  /**
   * Serving: it has a configuration. It keeps serving the last one it got while the control plane
   * is away (a server restart must not take the data plane down); `controlPlaneConnected` says so.
   */
  get ready(): boolean {
    return this.#config !== undefined && !this.#stopping;
  }

  get controlPlaneConnected(): boolean {
    return this.#feedOpen;
  }

  /** The tunnel endpoint's address, once started. */
  tunnelPort = 0;
  /** The SSH endpoint's port, once started (0 when SSH is off). */
  sshPort = 0;
  /** The TLS listener's port, once started (0 when off). */
  tlsPort = 0;
  /** The relay endpoint's port, once started (0 when off). */
  relayPort = 0;
  /** The plain-HTTP listener's port, once started (0 when off). */
  httpPort = 0;

  /** What this edge tells the control plane about where it is reached. */
  #advertised(): { tunnelAddr?: string; relayAddr?: string } {
    const { tunnel, relay, advertise } = this.options;
    const own = (host: string, port: number) =>
      isSpecificHost(host) && port !== 0 ? joinHostPort(host, port) : undefined;
    const tunnelAddr = advertise?.tunnelAddr ?? own(tunnel.host, tunnel.port || this.tunnelPort);
    const relayAddr = advertise?.relayAddr ?? (relay ? own(relay.host, this.relayPort) : undefined);
    return { ...(tunnelAddr && { tunnelAddr }), ...(relayAddr && { relayAddr }) };
  }

  /** Connects to the control plane, waits for the first configuration, then opens the listeners. */
  async start(): Promise<void> {
    // The relay serves only sessions held here: it may open before the first configuration, and must
    // (its address goes to the control plane with the feed).
    if (this.#relay && this.options.relay) {
      this.relayPort = (await this.#relay.listen(this.options.relay.port, this.options.relay.host)).port;
      this.#log.info({ port: this.relayPort }, 'relay endpoint listening');
    }
    this.#controlPlane.on('peers', (peers) => this.#peers.apply(peers));
    this.#peers.on('edges', (edges) => {
      for (const session of this.pool.all()) session.tellEdges?.(edges);
    });
    this.#controlPlane.on('config', (config) => this.#applyConfig(config));
    this.#controlPlane.on('command', (command) => this.#runCommand(command));
    this.#controlPlane.on('connected', () => {
      this.metrics.feedConnected.set(1);
      this.#feedOpen = true;
      this.#log.info('configuration feed open');
      // The control plane forgot our sessions when the feed dropped: tell it again.
      for (const session of this.pool.all()) this.#report(session);
    });
    this.#controlPlane.on('disconnected', (reason, retryInMs) => {
      this.metrics.feedConnected.set(0);
      this.#feedOpen = false;
      this.#log.warn({ reason, retryInMs }, 'configuration feed lost; reconnecting');
    });
    // The tunnel endpoint opens before the feed, so its address (port 0 included) goes to the
    // control plane with it; an agent that says hello before the first configuration waits for it.
    this.#tunnel.on('refused', (ip, reason) => this.#log.warn({ ip, reason }, 'agent connection refused'));
    this.tunnelPort = (await this.#tunnel.listen(this.options.tunnel.port, this.options.tunnel.host)).port;
    this.#log.info({ port: this.tunnelPort }, 'tunnel endpoint listening');
    this.#controlPlane.start();
    await this.#firstConfig;
    if (this.#tls && this.options.tls) {
      this.tlsPort = (await this.#tls.listen(this.options.tls.port, this.options.tls.host)).port;
      this.#log.info({ port: this.tlsPort }, 'TLS edge listener open');
    }
    if (this.#http && this.options.http) {
      this.httpPort = (await this.#http.listen(this.options.http.port, this.options.http.host)).port;
      this.#log.info({ port: this.httpPort }, 'plain-HTTP listener open (ACME HTTP-01, redirects to HTTPS)');
    }
    if (this.#ssh && this.options.ssh) {
      this.#ssh.on('session', (session) => {
        void this.#onSession(session); // never rejects: a failed report is logged and retried on reconnect
      });
      this.#ssh.on('refused', (ip, reason) => this.#log.warn({ ip, reason }, 'SSH connection refused'));
      this.sshPort = (await this.#ssh.listen(this.options.ssh.port, this.options.ssh.host)).port;
      this.#log.info({ port: this.sshPort }, 'SSH endpoint listening');
    }
  }

  /**
   * The tunnel certificate changed (its files were replaced): new agent handshakes get it; sessions
   * stay. Throws, keeping the old one, when the pair does not parse or match.
   */
  setTunnelCertificate(certificate: { cert: string; key: string }): void {
    this.#tunnel.setCertificate(certificate);
  }

  /** The SSH host key changed: new connections are offered it; sessions stay. Throws on a bad key. */
  setSshHostKeys(hostKeys: string[]): void {
    this.#ssh?.setHostKeys(hostKeys);
  }

  /**
   * Graceful stop (SIGTERM), in the order that fails no request: `/readyz` fails at once and the edge
   * goes on serving for `drainDelayMs` while load balancers take it out of rotation; then it stops
   * accepting public connections and agents, tells its agents to move (HTTP/2 GOAWAY: they open
   * their replacement on another edge, and their sessions here stop taking new streams, so new work
   * goes to other edges through the relay), and lets carried connections finish up to
   * `drainTimeoutMs` before it cuts them.
   */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    const drainDelayMs = this.options.drainDelayMs ?? 0;
    if (drainDelayMs > 0) {
      this.#log.info(
        { drainDelayMs },
        'draining: readiness fails, still serving until load balancers notice',
      );
      await new Promise((resolve) => setTimeout(resolve, drainDelayMs));
    }
    const drainTimeoutMs = this.options.drainTimeoutMs ?? 10_000;
    // Stop accepting first; `closed` settles once the last carried connection is gone.
    const listenersClosed = this.#tcp.close();
    const tlsClosed = this.#tls?.close(drainTimeoutMs);
    const httpClosed = this.#http?.close();
    this.#tunnel.stopAccepting();
    for (const session of this.pool.all()) {
      if (!session.drain?.()) continue;
      // Peers must stop passing connections to a session that takes no new stream.
      this.#controlPlane
        .removeSession(session.info.id)
        .catch((error: unknown) =>
          this.#log.warn({ err: error, sessionId: session.info.id }, 'withdrawing a drained session failed'),
        );
    }
    this.#log.info(
      { drainTimeoutMs },
      'draining: no new connections or sessions; waiting for those in flight',
    );
    const drained = Promise.all([
      this.#tcpRoutes.drained(),
      this.#https.drain(),
      // What this edge carries for other edges' clients finishes too (a neighbour mid-restart).
      this.#relay?.drained(),
    ]).then(() => true);
    const deadline = new Promise<false>((resolve) =>
      setTimeout(() => resolve(false), drainTimeoutMs).unref(),
    );
    const finished = await Promise.race([drained, deadline]);
    this.#log.info(
      { finished },
      finished ? 'drained: nothing in flight' : 'drain timeout: cutting what is still carried',
    );
    this.#tcpRoutes.cutCarried();
    await listenersClosed;
    await tlsClosed;
    await httpClosed;
    this.#https.close();
    await this.#relay?.close();
    await this.#tunnel.close();
    await this.#ssh?.close();
    this.#relayClient.close();
    await this.#controlPlane.stop();
  }

  async #credentialOfToken(token: string): Promise<{ id: string; acl: string[] }> {
    const hash = hashToken(token);
    const find = () => this.#config?.credentials.find((candidate) => candidate.token_hash === hash);
    // A credential created a moment ago may still be on its way from the control plane: an agent
    // started right after `POST /credentials` must not be refused for good.
    let credential = find();
    if (!credential) {
      await this.#nextConfig(UNKNOWN_TOKEN_GRACE_MS);
      credential = find();
    }
    if (!credential) throw new SessionRefused('the authtoken is unknown or was revoked');
    return credential;
  }

  /** The SSH credential whose public key is `blob` (SSH wire format), by OpenSSH's fingerprint. */
  #sshCredentialOfKey(blob: Buffer): { id: string; acl: string[] } | undefined {
    const fingerprint = `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
    return this.#config?.ssh_credentials.find((candidate) => candidate.fingerprint === fingerprint);
  }

  /** Resolves when the next configuration is applied, or after `timeoutMs`. */
  #nextConfig(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      const waiters = this.#configWaiters;
      function done() {
        clearTimeout(timer);
        waiters.delete(done);
        resolve();
      }
      waiters.add(done);
    });
  }

  /** Whether a credential may open a session binding `labels`; the new session's id if so. */
  #admit(request: {
    credential: { id: string; acl: string[] };
    labels: Record<string, string>;
    ip: string;
  }): {
    id: string;
    credentialId: string;
  } {
    const refused = refusedBinds(request.credential.acl, request.labels);
    if (refused.length > 0) {
      this.metrics.sessionsRefused.inc({ reason: 'acl' });
      this.#log.warn(
        { credentialId: request.credential.id, ip: request.ip, refused },
        'session refused: the credential ACL does not allow its binds',
      );
      throw new SessionRefused(`the credential's ACL does not allow bind ${refused.join(', ')}`);
    }
    return { id: newId('ts'), credentialId: request.credential.id };
  }

  /** Takes a new session into the pool and reports it; resolves once the control plane knows it. */
  async #onSession(session: TunnelSession): Promise<void> {
    const { info } = session;
    this.pool.add(session);
    this.metrics.sessions.inc({ transport: info.transport });
    this.#log.info(
      {
        sessionId: info.id,
        credentialId: info.credentialId,
        ip: info.ip,
        labels: info.labels,
        transport: info.transport,
      },
      'tunnel session online',
    );
    const reported = this.#report(session);
    session.once('closed', (reason) => {
      this.metrics.sessions.dec({ transport: info.transport });
      this.#log.info({ sessionId: info.id, reason }, 'tunnel session closed');
      // After the report settles, so a late PUT never brings back a session already gone.
      reported
        .then(() => this.#controlPlane.removeSession(info.id))
        .catch((error: unknown) =>
          this.#log.warn({ err: error, sessionId: info.id }, 'reporting a closed session failed'),
        );
    });
    await Promise.race([reported, new Promise((resolve) => setTimeout(resolve, REPORT_WAIT_MS))]);
  }

  /** Reports a session; never rejects, and gives up waiting after a while (the next feed reconnect reports again). */
  #report(session: TunnelSession): Promise<void> {
    const { info } = session;
    const report = this.#controlPlane
      .reportSession(info.id, {
        agent_version: info.agentVersion,
        credential_id: info.credentialId,
        ip: normalizeIp(info.ip),
        os: info.os,
        metadata: info.metadata ?? null,
        region: this.options.region,
        started_at: info.startedAt.toISOString().replace(/\.\d{3}Z$/, 'Z'),
        transport: info.transport,
        labels: info.labels,
      })
      .catch((error: unknown) =>
        // The feed's next `connected` reports every session again.
        this.#log.warn({ err: error, sessionId: info.id }, 'reporting a session failed'),
      );
    return report;
  }

  #runCommand(command: EdgeCommand): void {
    const session = this.pool.get(command.session_id);
    const done = session
      ? session.command(command.name).then(
          () => ({ ok: true as const }),
          (error: unknown) => ({
            ok: false as const,
            error: error instanceof Error ? error.message : String(error),
          }),
        )
      : Promise.resolve({ ok: false as const, error: 'the session is no longer online' });
    done
      .then((result) => {
        this.#log.info({ sessionId: command.session_id, command: command.name, result }, 'agent command');
        return this.#controlPlane.commandResult(command.id, result);
      })
      .catch((error: unknown) =>
        this.#log.warn({ err: error, command: command.name }, 'reporting a command result failed'),
      );
  }

  #applyConfig(config: EdgeConfig): void {
    if (config.revision === this.#config?.revision) return;
    this.#config = config;
    this.metrics.configApplied.inc();
    this.#closeSessionsNoLongerAllowed(config);
    this.#tcpRoutes.apply(config);
    this.#certificates.apply(config);
    this.#acmeChallenges.apply(config);
    this.#tlsRoutes.apply(config);
    this.#httpsRoutes.apply(config, {
      cookieKey: this.#cookieKey,
      ...(this.options.identityProviderCas && { identityProviderCas: this.options.identityProviderCas }),
      log: ({ level, message, routeId, detail }) => this.#log[level]({ routeId, ...detail }, message),
      onCircuitBreakerState: (routeId, state) => {
        this.metrics.circuitBreakerOpen.set({ route_id: routeId }, state === 'closed' ? 0 : 1);
        this.#log.warn({ routeId, state }, 'circuit breaker state changed');
      },
    });
    this.#https.retainUpstreams(
      config.https_edges.flatMap((edge) =>
        edge.routes.flatMap((route) => {
          const labels = this.#httpsRoutes.routeLabels(route.id);
          return labels ? [labels] : [];
        }),
      ),
    );
    this.metrics.routesUnreadable.set(
      config.https_edges.reduce(
        (count, edge) => count + edge.routes.filter((route) => this.#httpsRoutes.problemOf(route.id)).length,
        0,
      ),
    );
    if (!this.#stopping) this.#tcp.apply(new Set(this.#tcpRoutes.ports()));
    this.#log.info({ revision: config.revision, tcpPorts: this.#tcpRoutes.ports() }, 'configuration applied');
    this.#resolveFirstConfig();
    for (const waiter of [...this.#configWaiters]) waiter();
  }

  /** A deleted credential's sessions end; so do sessions whose binds its ACL no longer allows. */
  #closeSessionsNoLongerAllowed(config: EdgeConfig): void {
    for (const session of this.pool.all()) {
      const { info } = session;
      const credentials = info.transport === 'ssh' ? config.ssh_credentials : config.credentials;
      const credential = credentials.find((candidate) => candidate.id === info.credentialId);
      if (!credential) {
        this.#log.info(
          { sessionId: info.id, credentialId: info.credentialId },
          'credential deleted: closing its session',
        );
        session.close('its credential was deleted');
        continue;
      }
      const refused = refusedBinds(credential.acl, info.labels);
      if (refused.length > 0) {
        this.#log.info({ sessionId: info.id, refused }, 'credential ACL changed: closing the session');
        session.close(`the credential's ACL no longer allows bind ${refused.join(', ')}`);
      }
    }
  }

  /** An HTTPS edge for the SNI: TLS and HTTP are served by the HTTPS front. */
  async #httpsRoute(serverName: string | undefined): Promise<TlsRoute | undefined> {
    if (!serverName) return undefined;
    const entry = this.#httpsRoutes.edgeFor(serverName);
    if (!entry) return undefined;
    const certificate = await this.#certificates.for(serverName, entry.edge.id);
    return {
      edgeId: entry.edge.id,
      allowed: true,
      mode: 'http',
      serve: (socket) =>
        this.#https.serve(socket, {
          certificate,
          minVersion: entry.minVersion,
          ...(entry.clientCas && { clientCas: entry.clientCas }),
        }),
    };
  }

  #onTlsEvent(event: TlsEdgeEvent): void {
    const edgeId = event.edgeId ?? 'none';
    if (event.type === 'closed') {
      if (event.edgeId) {
        this.metrics.bytes.inc({ edge_id: edgeId, direction: 'in' }, event.bytesIn ?? 0);
        this.metrics.bytes.inc({ edge_id: edgeId, direction: 'out' }, event.bytesOut ?? 0);
      }
      return;
    }
    const outcome = event.type === 'accepted' ? 'carried' : event.type;
    this.metrics.connections.inc({ edge_id: edgeId, outcome });
    const fields = { edgeId: event.edgeId, ip: event.ip, serverName: event.serverName, reason: event.reason };
    if (event.type === 'accepted') this.#log.debug(fields, 'carrying a TLS connection');
    else if (event.type === 'acme_challenge')
      this.#log.debug(fields, 'answered an ACME TLS-ALPN-01 validation');
    else this.#log.info(fields, `TLS connection not carried: ${event.type}`);
  }
}
