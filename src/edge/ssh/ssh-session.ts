import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import type { Connection, ServerChannel } from 'ssh2';
import type { SessionLivenessSettings } from '../../schemas/tunnel-protocol.js';
import { SessionLiveness } from '../routing/session-liveness.js';
import type {
  AgentCommandName,
  TunnelSession,
  TunnelSessionEvents,
  TunnelSessionInfo,
} from '../routing/tunnel-session.js';
import { ExitStatus } from './command-line.js';

/** The remote forward (`ssh -R`) a session's connections go through, as the client asked for it. */
export interface RemoteForward {
  /** The bind address of the client's `tcpip-forward` request (`localhost` for `-R 0:…`). */
  bindAddr: string;
  /** The port the edge answered: the one asked for, or a nominal one the edge chose for `-R 0:…`. */
  port: number;
}

/** What carries a session: the SSH connection, its `tunnel` command's channel and its forward. */
export interface SshCarrier {
  connection: Connection;
  /** The session channel that runs `tunnel`: the user's terminal. */
  channel: ServerChannel;
  /** Whether the client asked for a pseudo-terminal (`ssh -t`): output then needs CR LF. */
  pty: boolean;
  forward: RemoteForward;
  /** Tears the TCP connection down at once (a vanished client never answers a polite end). */
  destroySocket: () => void;
  /** Bytes read from the client's TCP connection so far: any new byte is a sign of life. */
  bytesRead: () => number;
  /** The endpoint's liveness settings; its ssh2 server sends a keepalive after `intervalMs` of silence. */
  liveness: SessionLivenessSettings;
}

/** How long a client may take to leave after its session was closed, before the edge hangs up. */
const LEAVE_GRACE_MS = 2_000;

/** Why a session whose client stopped answering is closed (ssh2's own keepalive timeout says the same). */
const KEEPALIVE_TIMEOUT_REASON = 'the ssh client stopped answering keepalives';

/**
 * One tunnel session carried by an OpenSSH client: public connections are `forwarded-tcpip`
 * channels the edge opens on the client's remote forward, which ssh connects to its `-R` target.
 * The `tunnel` command's channel is where the user hears about the session (its stdout and stderr);
 * the session lasts as long as the SSH connection. OpenSSH answers the keepalives ssh2 sends after
 * a silence: a client that stops answering leaves rotation, then is closed. Emits `closed` once,
 * and `rotation`.
 */
export class SshSession extends EventEmitter<TunnelSessionEvents> implements TunnelSession {
  #closed = false;
  readonly #liveness: SessionLiveness;
  /** Channels asked for that ssh has not answered yet: abandoned if the session leaves rotation. */
  readonly #unanswered = new Set<() => void>();
  readonly #connection: Connection;
  readonly #channel: ServerChannel;
  readonly #pty: boolean;
  readonly #forward: RemoteForward;
  readonly #destroySocket: () => void;

  constructor(
    readonly info: TunnelSessionInfo,
    { connection, channel, pty, forward, destroySocket, bytesRead, liveness }: SshCarrier,
  ) {
    super();
    this.#connection = connection;
    this.#channel = channel;
    this.#pty = pty;
    this.#forward = forward;
    this.#destroySocket = destroySocket;
    this.#liveness = new SessionLiveness({ received: bytesRead }, liveness);
    this.#liveness.on('rotation', (inRotation) => {
      if (!inRotation) for (const abandon of [...this.#unanswered]) abandon();
      this.emit('rotation', inRotation);
    });
    this.#liveness.on('dead', () => {
      this.close(KEEPALIVE_TIMEOUT_REASON);
      // A frozen client reads nothing: the polite end would wait for it in vain.
      destroySocket();
    });
    connection.once('end', () => this.#markClosed('the ssh client disconnected'));
    connection.once('close', () => this.#markClosed('the ssh client disconnected'));
    connection.on('error', (error: Error & { level?: string }) => {
      if (error.level === 'client-timeout') {
        this.#markClosed(KEEPALIVE_TIMEOUT_REASON);
      } else {
        this.#markClosed(`connection failed: ${error.message}`);
      }
      destroySocket();
    });
    // The tunnel command's channel closes when ssh exits or drops it: nothing left to tell the user.
    channel.once('close', () => this.close('the ssh client closed the tunnel command'));
    // What the user types is not for us; with a pseudo-terminal, Ctrl-C and Ctrl-D arrive as bytes
    // (ETX, EOT) rather than as a signal to the local ssh, and end the session.
    channel.on('data', (chunk: Buffer) => {
      if (pty && (chunk.includes(0x03) || chunk.includes(0x04))) {
        this.#end('interrupted from the terminal', ExitStatus.ok);
      }
    });
  }

  get id(): string {
    return this.info.id;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get inRotation(): boolean {
    return !this.#closed && this.#liveness.inRotation;
  }

  markSuspect(reason: string): void {
    if (!this.#closed) this.#liveness.markSuspect(reason);
  }

  /** OpenSSH cannot be told to move: its session serves until the edge stops, then it reconnects. */
  readonly draining = false;

  drain(): boolean {
    return false;
  }

  /** OpenSSH dials one edge: it has no use for the others. */
  tellEdges(): void {}

  /**
   * Opens a `forwarded-tcpip` channel on the client's remote forward, from the public client's
   * address; ssh connects it to its `-R` target. Rejects when ssh cannot reach it (it refuses the
   * channel), the session is gone, or it leaves rotation before ssh answered (a frozen client
   * never will; a channel it opens later is closed at once).
   */
  openStream(source: { ip: string; port: number }): Promise<Duplex> {
    if (this.#closed) return Promise.reject(new Error(`session ${this.id} is closed`));
    return new Promise((resolve, reject) => {
      let abandoned = false;
      const abandon = () => {
        abandoned = true;
        this.#unanswered.delete(abandon);
        reject(new Error(`session ${this.id} left rotation before the ssh client answered`));
      };
      this.#unanswered.add(abandon);
      try {
        this.#connection.forwardOut(
          this.#forward.bindAddr,
          this.#forward.port,
          source.ip,
          source.port,
          (error, stream) => {
            this.#unanswered.delete(abandon);
            if (abandoned) {
              stream?.destroy();
              return;
            }
            if (error) {
              reject(
                new Error(`session ${this.id}: the ssh client could not reach its target: ${error.message}`, {
                  cause: error,
                }),
              );
              return;
            }
            resolve(stream);
          },
        );
      } catch (error) {
        this.#unanswered.delete(abandon);
        reject(new Error(`session ${this.id}: stream failed`, { cause: error }));
      }
    });
  }

  /** `stop` ends the session (ssh exits with status 0); OpenSSH has no way to restart or update. */
  command(name: AgentCommandName): Promise<void> {
    switch (name) {
      case 'stop':
        this.#end('stopped by the edge', ExitStatus.ok);
        return Promise.resolve();
      case 'restart':
        return Promise.reject(
          new Error(
            'OpenSSH sessions cannot be restarted remotely: the ssh client decides when to reconnect',
          ),
        );
      case 'update':
        return Promise.reject(
          new Error('OpenSSH sessions cannot be updated remotely: the agent is an unmodified OpenSSH client'),
        );
    }
  }

  /** Ends the session: the user is told why, ssh exits with status 1, the connection is hung up. */
  close(reason: string): void {
    this.#end(reason, ExitStatus.refused);
  }

  /**
   * Tells the user on the tunnel command's stderr, sends the exit status and closes the channel:
   * ssh then exits by itself (a disconnect right away would make it drop that output and exit 255).
   * A client that has not left after a grace period is hung up on.
   */
  #end(reason: string, status: number): void {
    if (this.#closed) return;
    this.#markClosed(reason);
    try {
      if (this.#channel.writable) {
        this.#channel.stderr.write(
          terminalText(`edgeward: session ${this.id} closed: ${reason}\n`, this.#pty),
        );
        this.#channel.exit(status);
        this.#channel.end();
      }
    } catch {
      // the channel is already gone; the hang-up below still applies
    }
    setTimeout(() => {
      this.#connection.end();
      setTimeout(this.#destroySocket, 1_000).unref();
    }, LEAVE_GRACE_MS).unref();
  }

  #markClosed(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#liveness.stop();
    this.emit('closed', reason);
  }
}

/** Text for the user's terminal: a pseudo-terminal in raw mode needs CR LF line ends. */
export function terminalText(text: string, pty: boolean): string {
  return pty ? text.replace(/\r?\n/g, '\r\n') : text;
}
