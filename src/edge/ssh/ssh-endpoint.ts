/**
 * The edge's SSH endpoint: the second tunnel transport, for which the agent is an unmodified
 * OpenSSH client with a remote forward.
 *
 *     ssh -p 2222 -i KEY -R 0:localhost:8080 EDGE-HOST tunnel --label edge=web --label team=a
 *
 * Command words (the remote command; see `command-line.ts` for the grammar and docs/data-plane.md):
 *
 * - `tunnel --label KEY=VALUE [--label KEY=VALUE]... [--metadata TEXT]` (also `-l`, `-m`,
 *   `--label=KEY=VALUE`): opens a session whose tunnel group is those labels, prints its id, labels
 *   and forward on the client's stdout, then stays open until ssh exits. Needs the `-R` forward
 *   (OpenSSH sends its `tcpip-forward` request before the command); without one it exits 2.
 *   When the edge refuses the session (`SessionRefused`, e.g. the credential's ACL does not allow
 *   the bind) its message goes to stderr and ssh exits 1.
 * - `help` (also `--help`, `-h`, `tunnel --help`): prints the usage on stdout, exit 0.
 * - anything else, or no command at all (an interactive shell): a message on stderr, exit 2.
 *
 * One connection carries at most one session; it uses the first remote forward (later ones are
 * refused). The forward's port is not used for routing — the edge routes by labels — so the edge
 * answers `tcpip-forward` with the port asked for, or a nominal non-zero port for `-R 0:…`, and
 * opens each carried connection as a `forwarded-tcpip` channel on that address and port.
 *
 * Authentication is publickey only. The `authenticate` callback decides whether a key is
 * registered; the edge then verifies the client's signature over the session identifier with that
 * key (`utils.parseKey(blob).verify(ctx.blob, ctx.signature, ctx.hashAlgo)`), so a client must hold
 * the private key, not just know the public one. A connection that has not finished the key
 * exchange within `handshakeTimeoutMs` or authenticated within `authTimeoutMs` (ssh2's server has
 * no such timeouts: these are ours), or that runs no `tunnel` command within `commandTimeoutMs` of
 * authenticating (e.g. `ssh -N`, which cannot carry labels), is closed; the pre-authentication
 * banner says so. One source address may hold `maxUnauthenticatedPerSource` connections that have
 * not authenticated; one more is closed at once.
 * ssh2 sends a keepalive after every `liveness.intervalMs` without a packet from the client; a
 * client silent for `intervalMs + overdueMs` is out of rotation, and closed after `intervalMs +
 * timeoutMs` (see `SessionLiveness`).
 */
import { EventEmitter } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import ssh2, {
  type AuthContext,
  type ClientInfo,
  type Connection,
  type PublicKeyAuthContext,
  type Server,
  type ServerChannel,
} from 'ssh2';
import type { SessionLivenessSettings } from '../../schemas/tunnel-protocol.js';
import { PerSourceLimit, type ReleaseSlot } from '../listeners/per-source-limit.js';
import { type DropKind, UNAUTHENTICATED_DEFAULTS } from '../listeners/unauthenticated-limits.js';
import { resolveLiveness } from '../routing/session-liveness.js';
import type { TunnelSessionInfo } from '../routing/tunnel-session.js';
import { SessionRefused } from '../tunnel/tunnel-endpoint.js';
import { ExitStatus, formatLabels, parseCommandLine, usage } from './command-line.js';
import { type RemoteForward, SshSession, terminalText } from './ssh-session.js';

export { SessionRefused };

/** What the caller decides a new session from. */
export interface SshSessionRequest {
  credentialId: string;
  labels: Record<string, string>;
  metadata: string | undefined;
  ip: string;
  agentVersion: string;
  os: string;
}

export interface SshEndpointOptions {
  /** The edge's host private keys (PEM or OpenSSH format), at most one per key type. */
  hostKeys: (string | Buffer)[];
  /**
   * Whether a public key (`algorithm` like `ssh-ed25519`, `data` the SSH wire-format key blob) is a
   * registered SSH credential: its id, or undefined to refuse. The signature is checked here.
   */
  authenticate(
    key: { algorithm: string; data: Buffer },
    username: string,
    ip: string,
  ): Promise<{ credentialId: string } | undefined>;
  /** The new session's id, or throws `SessionRefused` whose message the SSH user is shown. */
  openSession(request: SshSessionRequest): Promise<{ id: string }>;
  /** How long an authenticated connection may wait before running `tunnel` (ms, default 10 s). */
  commandTimeoutMs?: number;
  /** How long a connection may take to authenticate (ms, default 30 s). */
  authTimeoutMs?: number;
  /** How long a connection may take to finish the SSH key exchange (ms, default 10 s). */
  handshakeTimeoutMs?: number;
  /** Connections one source address may hold before they authenticate (default 16). */
  maxUnauthenticatedPerSource?: number;
  /** How sessions' clients are kept checked (SSH keepalives); `SESSION_LIVENESS` by default. */
  liveness?: Partial<SessionLivenessSettings>;
  /** The text shown before authentication; false for none. Default: a one-line usage hint. */
  banner?: string | false;
}

const MAX_FAILED_AUTH_ATTEMPTS = 20;
const SOFTWARE_MAX_CHARS = 64;
/** Where nominal ports for `-R 0:…` forwards come from: they are only echoed, never bound. */
const NOMINAL_PORT_FIRST = 10_000;
const NOMINAL_PORT_COUNT = 50_000;

/** One TCP connection's state, from accept to close. */
interface ConnectionState {
  socket: net.Socket;
  ip: string;
  /** Its source address's slot, held until it authenticates. */
  releaseSlot: ReleaseSlot;
  /** Runs until the first key exchange is done. */
  handshakeTimer?: NodeJS.Timeout;
  /** What ssh2 said went wrong with the protocol, for `dropped`. */
  protocolError?: string;
  client?: Connection;
  agentVersion: string;
  os: string;
  /** Public key checks already answered on this connection, by `username\0key blob`. */
  keyChecks: Map<string, Promise<{ credentialId: string } | undefined>>;
  failedAuths: number;
  /** Why the last authentication attempt failed, for `refused` if the client gives up. */
  authFailure?: string;
  /** Whether `refused` or `dropped` was emitted for this connection already. */
  reported: boolean;
  credentialId?: string;
  forward?: RemoteForward;
  refusedForwards: number;
  /** `opening` while openSession runs, then the session. */
  session?: SshSession | 'opening';
  closed: boolean;
  timer?: NodeJS.Timeout;
}

/**
 * Where OpenSSH clients dial in: an SSH server (ssh2) that authenticates by public key, takes the
 * client's remote forward and `tunnel` command, and keeps the sessions the caller accepts. Emits
 * `session` for each new one (a session emits `closed` when its client goes), `refused` for a
 * connection that tried a key or a command and did not become one, and `dropped` for one that
 * never tried (over the per-source limit, no key exchange or authentication in time, gone).
 */
export class SshEndpoint extends EventEmitter<{
  session: [SshSession];
  refused: [ip: string, reason: string];
  dropped: [ip: string, kind: DropKind, reason: string];
}> {
  readonly #listener: net.Server;
  /** ssh2's server, handed each socket; replaced when the host keys change (see `setHostKeys`). */
  #ssh: Server;
  readonly #banner: string | undefined;
  readonly #sessions = new Map<string, SshSession>();
  /** Open TCP connections by `remote address|remote port`, to find a socket from ssh2's client. */
  readonly #connections = new Map<string, ConnectionState>();
  readonly #commandTimeoutMs: number;
  readonly #authTimeoutMs: number;
  readonly #handshakeTimeoutMs: number;
  readonly #liveness: SessionLivenessSettings;
  readonly #perSource: PerSourceLimit;
  #nominalPort = 0;

  constructor(private readonly options: SshEndpointOptions) {
    super();
    this.#commandTimeoutMs = options.commandTimeoutMs ?? 10_000;
    this.#liveness = resolveLiveness(options.liveness);
    this.#authTimeoutMs = options.authTimeoutMs ?? UNAUTHENTICATED_DEFAULTS.sshAuthTimeoutMs;
    this.#handshakeTimeoutMs = options.handshakeTimeoutMs ?? UNAUTHENTICATED_DEFAULTS.handshakeTimeoutMs;
    this.#perSource = new PerSourceLimit(
      options.maxUnauthenticatedPerSource ?? UNAUTHENTICATED_DEFAULTS.maxPerSource,
    );
    const banner =
      options.banner === false
        ? undefined
        : (options.banner ??
          `edgeward edge: open a tunnel with \`ssh -R 0:HOST:PORT ... tunnel --label KEY=VALUE\` ` +
            `(\`help\` shows the usage); a connection that runs no tunnel command within ` +
            `${duration(this.#commandTimeoutMs)} is closed.`);
    this.#banner = banner;
    this.#ssh = this.#sshServer(options.hostKeys);
    // We own the TCP listener and hand each socket to ssh2, so a connection's socket can be
    // destroyed when its client vanishes (ssh2 only ever ends it politely).
    this.#listener = net.createServer((socket) => this.#onSocket(socket));
  }

  /**
   * Offers `hostKeys` to the connections from now on; connections already up keep theirs. Throws
   * (and changes nothing) when a key does not parse.
   */
  setHostKeys(hostKeys: (string | Buffer)[]): void {
    this.#ssh = this.#sshServer(hostKeys);
  }

  #sshServer(hostKeys: (string | Buffer)[]): Server {
    return new ssh2.Server(
      {
        hostKeys,
        ident: 'edgeward',
        ...(this.#banner ? { banner: this.#banner } : {}),
        // The keepalives every session's liveness counts on; ssh2's own give-up is a backstop
        // that comes after the session's liveness has closed it.
        keepaliveInterval: this.#liveness.intervalMs,
        keepaliveCountMax: Math.ceil(this.#liveness.timeoutMs / this.#liveness.intervalMs) + 1,
      },
      (client, info) => this.#onConnection(client, info),
    );
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
  sessions(): SshSession[] {
    return [...this.#sessions.values()];
  }

  session(id: string): SshSession | undefined {
    return this.#sessions.get(id);
  }

  /**
   * Stops accepting, tells every session's user the edge is shutting down, and hangs up on every
   * connection that is still there a moment later.
   */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#listener.close(() => resolve()));
    for (const session of this.#sessions.values()) session.close('edge shutting down');
    for (const state of this.#connections.values()) {
      if (!(state.session instanceof SshSession)) state.socket.destroy();
    }
    const hangUp = setTimeout(() => {
      for (const state of this.#connections.values()) state.socket.destroy();
    }, 3_000);
    await closed;
    clearTimeout(hangUp);
  }

  #onSocket(socket: net.Socket): void {
    const admitted = this.#perSource.admit(socket, (ip, reason) =>
      this.emit('dropped', ip, 'per_source_limit', reason),
    );
    if (!admitted) return;
    const { ip, release: releaseSlot } = admitted;
    const key = connectionKey(socket.remoteAddress, socket.remotePort);
    const state: ConnectionState = {
      socket,
      ip,
      releaseSlot,
      agentVersion: 'unknown',
      os: 'unknown',
      keyChecks: new Map(),
      failedAuths: 0,
      reported: false,
      refusedForwards: 0,
      closed: false,
    };
    this.#connections.set(key, state);
    socket.setNoDelay(true);
    socket.on('error', () => {}); // ssh2 reports it on the connection; the close below follows
    socket.once('close', () => {
      state.closed = true;
      clearTimeout(state.timer);
      clearTimeout(state.handshakeTimer);
      releaseSlot();
      this.#connections.delete(key);
      if (state.credentialId) return;
      if (state.authFailure) this.#refuse(state, state.authFailure);
      else if (state.protocolError) this.#drop(state, 'handshake_failed', state.protocolError);
      else this.#drop(state, 'closed', 'the client closed the connection before authenticating');
    });
    state.handshakeTimer = setTimeout(() => {
      this.#drop(
        state,
        'handshake_timeout',
        `no SSH key exchange within ${duration(this.#handshakeTimeoutMs)}`,
      );
      socket.destroy();
    }, this.#handshakeTimeoutMs);
    state.timer = setTimeout(() => {
      const reason = `did not authenticate within ${duration(this.#authTimeoutMs)}`;
      // Only a client that tried a key was refused; one that never tried is noise, not news.
      if (state.authFailure) this.#refuse(state, `${reason} (${state.authFailure})`);
      else this.#drop(state, 'auth_timeout', reason);
      socket.destroy();
    }, this.#authTimeoutMs);
    this.#ssh.injectSocket(socket);
  }

  #onConnection(client: Connection, info: ClientInfo): void {
    const state = this.#connections.get(connectionKey(info.ip, info.port));
    if (!state) {
      client.end();
      return;
    }
    state.client = client;
    state.agentVersion = printable(info.header.versions.software).slice(0, SOFTWARE_MAX_CHARS) || 'unknown';
    state.os = printable(info.header.comments ?? '').slice(0, SOFTWARE_MAX_CHARS) || 'unknown';
    // The socket's close ends the connection and its session; the error is the reason if it never authenticated.
    client.on('error', (error) => {
      state.protocolError ??= `SSH protocol error: ${error.message}`;
    });
    client.once('handshake', () => clearTimeout(state.handshakeTimer));
    client.on('authentication', (ctx) => this.#onAuthentication(state, ctx));
    client.once('ready', () => {
      // Authenticated: it no longer counts against its address's limit.
      state.releaseSlot();
      clearTimeout(state.timer);
      state.timer = setTimeout(() => {
        if (state.session) return;
        this.#refuse(state, `ran no tunnel command within ${duration(this.#commandTimeoutMs)}`);
        client.end();
        setTimeout(() => state.socket.destroy(), 1_000).unref();
      }, this.#commandTimeoutMs);
    });
    client.on('request', (accept, reject, name, bind) =>
      this.#onGlobalRequest(state, accept, reject, name, bind),
    );
    client.on('session', (accept) => {
      const session = accept();
      let pty = false;
      session.on('pty', (ok) => {
        pty = true;
        ok?.();
      });
      session.on('env', (ok) => ok?.());
      session.on('window-change', (ok) => ok?.());
      session.on('x11', (_ok, no) => no?.());
      session.on('auth-agent', (_ok, no) => no?.());
      session.on('sftp', (_ok, no) => no?.());
      session.on('subsystem', (_ok, no) => no?.());
      session.on('shell', (ok) => this.#run(state, ok(), '', pty));
      session.on('exec', (ok, _no, { command }) => this.#run(state, ok(), command, pty));
    });
    // Nothing else is offered: no direct-tcpip (`ssh -L`), no streamlocal.
    client.on('tcpip', (_accept, reject) => reject());
    client.on('openssh.streamlocal', (_accept, reject) => reject());
  }

  #onAuthentication(state: ConnectionState, ctx: AuthContext): void {
    if (ctx.method !== 'publickey') {
      ctx.reject(['publickey']);
      return;
    }
    this.#checkPublicKey(state, ctx).then(
      (credentialId) => {
        if (credentialId) {
          // Without a signature this only tells the client the key would do (SSH_MSG_USERAUTH_PK_OK).
          if (ctx.signature) state.credentialId = credentialId;
          ctx.accept();
          return;
        }
        ctx.reject(['publickey']);
        if (++state.failedAuths >= MAX_FAILED_AUTH_ATTEMPTS) {
          this.#refuse(state, 'too many authentication attempts');
          state.socket.destroy();
        }
      },
      (error: unknown) => {
        state.authFailure = `the key check failed: ${error instanceof Error ? error.message : String(error)}`;
        ctx.reject(['publickey']);
      },
    );
  }

  /** The credential the key belongs to, if it is registered and (when signed) the signature holds. */
  async #checkPublicKey(state: ConnectionState, ctx: PublicKeyAuthContext): Promise<string | undefined> {
    const parsed = ssh2.utils.parseKey(ctx.key.data);
    if (parsed instanceof Error || parsed.type !== ctx.key.algo) {
      state.authFailure = `unsupported public key type ${ctx.key.algo}`;
      return undefined;
    }
    if (ctx.signature) {
      if (!ctx.blob || parsed.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) {
        state.authFailure = `bad signature for a ${parsed.type} key`;
        return undefined;
      }
    }
    const cacheKey = `${ctx.username}\0${ctx.key.data.toString('base64')}`;
    let check = state.keyChecks.get(cacheKey);
    if (!check) {
      check = this.options.authenticate(
        { algorithm: parsed.type, data: ctx.key.data },
        ctx.username,
        state.ip,
      );
      state.keyChecks.set(cacheKey, check);
    }
    const credentialId = (await check)?.credentialId;
    if (!credentialId) state.authFailure = `the ${parsed.type} key is not a registered SSH credential`;
    return credentialId;
  }

  #refuse(state: ConnectionState, reason: string): void {
    if (state.reported) return;
    state.reported = true;
    this.emit('refused', state.ip, reason);
  }

  #drop(state: ConnectionState, kind: DropKind, reason: string): void {
    if (state.reported) return;
    state.reported = true;
    this.emit('dropped', state.ip, kind, reason);
  }

  #onGlobalRequest(
    state: ConnectionState,
    accept: ((port?: number) => void) | undefined,
    reject: (() => void) | undefined,
    name: string,
    bind: { bindAddr?: string; bindPort?: number },
  ): void {
    if (name === 'tcpip-forward' && typeof bind.bindAddr === 'string' && typeof bind.bindPort === 'number') {
      if (state.forward) {
        state.refusedForwards++;
        reject?.();
        return;
      }
      const port = bind.bindPort === 0 ? this.#nextNominalPort() : bind.bindPort;
      state.forward = { bindAddr: bind.bindAddr, port };
      accept?.(port);
      return;
    }
    if (name === 'cancel-tcpip-forward' && state.forward && bind.bindAddr === state.forward.bindAddr) {
      if (bind.bindPort === state.forward.port) {
        accept?.();
        state.forward = undefined;
        if (state.session instanceof SshSession)
          state.session.close('the ssh client cancelled its remote forward');
        return;
      }
    }
    reject?.();
  }

  #nextNominalPort(): number {
    this.#nominalPort = (this.#nominalPort + 1) % NOMINAL_PORT_COUNT;
    return NOMINAL_PORT_FIRST + this.#nominalPort;
  }

  /** Runs one remote command (`''` for a shell) on a session channel. */
  #run(state: ConnectionState, channel: ServerChannel, line: string, pty: boolean): void {
    const finish = (status: number, stdout: string, stderr: string) =>
      finishCommand(channel, status, terminalText(stdout, pty), terminalText(stderr, pty));
    const command = parseCommandLine(line);
    if (command.kind === 'help') {
      finish(ExitStatus.ok, usage(), '');
      return;
    }
    if (command.kind === 'invalid') {
      finish(ExitStatus.usage, '', `edgeward: ${command.message}\nRun \`help\` for the usage.\n`);
      return;
    }
    if (state.session) {
      const which = state.session instanceof SshSession ? ` ${state.session.id}` : '';
      finish(
        ExitStatus.usage,
        '',
        `edgeward: this connection already carries tunnel session${which}; open another ssh connection for another one\n`,
      );
      return;
    }
    if (!state.forward) {
      finish(
        ExitStatus.usage,
        '',
        'edgeward: tunnel needs a remote forward: add -R 0:HOST:PORT to the ssh command, where HOST:PORT is ' +
          'the service the tunnel carries connections to.\n',
      );
      return;
    }
    const credentialId = state.credentialId;
    const client = state.client;
    if (!credentialId || !client) {
      finish(ExitStatus.refused, '', 'edgeward: not authenticated\n');
      return;
    }
    state.session = 'opening';
    clearTimeout(state.timer);
    const forward = state.forward;
    const request: SshSessionRequest = {
      credentialId,
      labels: command.labels,
      metadata: command.metadata,
      ip: state.ip,
      agentVersion: state.agentVersion,
      os: state.os,
    };
    this.options.openSession(request).then(
      ({ id }) => {
        const info: TunnelSessionInfo = { id, ...request, transport: 'ssh', startedAt: new Date() };
        const session = new SshSession(info, {
          connection: client,
          channel,
          pty,
          forward,
          destroySocket: () => state.socket.destroy(),
          bytesRead: () => state.socket.bytesRead,
          liveness: this.#liveness,
        });
        state.session = session;
        this.#sessions.set(id, session);
        session.once('closed', () => this.#sessions.delete(id));
        if (!state.closed) {
          write(channel, terminalText(describeSession(session, forward, state.refusedForwards), pty));
        }
        this.emit('session', session);
        // Every id openSession handed out gets its `session` and `closed`, even for a client that
        // left while the session was being opened.
        if (state.closed) session.close('the ssh client disconnected while the session was opening');
      },
      (error: unknown) => {
        state.session = undefined;
        const refused = error instanceof SessionRefused;
        const reason = error instanceof Error ? error.message : String(error);
        this.#refuse(state, reason);
        finish(
          ExitStatus.refused,
          '',
          refused
            ? `edgeward: session refused: ${reason}\n`
            : 'edgeward: the edge could not open the session; try again later\n',
        );
        // ssh exits once its command has; hang up on a client that stays anyway.
        setTimeout(() => {
          client.end();
          setTimeout(() => state.socket.destroy(), 1_000).unref();
        }, 2_000).unref();
      },
    );
  }
}

function describeSession(session: SshSession, forward: RemoteForward, refusedForwards: number): string {
  const { info } = session;
  const lines = [
    `edgeward: tunnel session ${info.id} is online`,
    `  labels:   ${formatLabels(info.labels)}`,
    ...(info.metadata !== undefined ? [`  metadata: ${info.metadata}`] : []),
    `  forwards: connections for the tunnel group ${formatLabels(info.labels)}, through your -R forward ` +
      `(${forward.bindAddr || '*'}:${forward.port}, a nominal port: the edge routes by labels), ` +
      'to the HOST:PORT you gave -R',
    ...(refusedForwards > 0
      ? [
          `  note:     only the first -R forward is used; ${refusedForwards} more ` +
            `${refusedForwards === 1 ? 'was' : 'were'} refused`,
        ]
      : []),
    '  It stays open until ssh exits (Ctrl-C).',
    '',
  ];
  return lines.join('\n');
}

/** Writes the output, sends the exit status and closes the channel: ssh exits with that status. */
function finishCommand(channel: ServerChannel, status: number, stdout: string, stderr: string): void {
  try {
    if (stdout) channel.write(stdout);
    if (stderr) channel.stderr.write(stderr);
    channel.exit(status);
    channel.end();
  } catch {
    // the client has already gone
  }
}

function write(channel: ServerChannel, text: string): void {
  try {
    channel.write(text);
  } catch {
    // the client has already gone; its session closes with the connection
  }
}

/** `10 s`, `1500 ms` */
function duration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

function connectionKey(address: string | undefined, port: number | undefined): string {
  return `${address ?? ''}|${port ?? ''}`;
}

/** Printable ASCII only: what a client says of itself ends up in logs and the API. */
function printable(text: string): string {
  let out = '';
  for (const char of text.trim()) {
    const code = char.charCodeAt(0);
    out += code >= 0x20 && code < 0x7f ? char : '?';
  }
  return out;
}
