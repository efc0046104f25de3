import { EventEmitter } from 'node:events';
import { type ClientHttp2Session, constants as http2Constants } from 'node:http2';
import type { Duplex } from 'node:stream';
import {
  commandRefusal,
  type LiveEdge,
  type SessionLivenessSettings,
  SourceHeader,
  TunnelPath,
} from '../../schemas/tunnel-protocol.js';
import { SessionLiveness } from '../routing/session-liveness.js';
import type {
  AgentCommandName,
  TunnelSession,
  TunnelSessionEvents,
  TunnelSessionInfo,
} from '../routing/tunnel-session.js';
import { requestAgent } from './request.js';

/** The agent declined a command (409); the message is the agent's own, meant for whoever asked. */
export class AgentCommandRefused extends Error {}

const COMMAND_TIMEOUT_MS = 10_000;

/**
 * One online `edgeward agent` (transport `svc/2`): carried connections are HTTP/2 streams the edge
 * opens to it, commands are requests on the same connection. The edge pings the agent (HTTP/2
 * PING): one that stops answering leaves rotation, then is closed. Emits `closed` once, when the
 * agent's connection ends for whatever reason, and `rotation`.
 */
export class AgentSession extends EventEmitter<TunnelSessionEvents> implements TunnelSession {
  #closed = false;
  readonly #liveness: SessionLiveness;
  /** Bytes read from the agent's connection, as last seen while it was open. */
  #bytesRead = 0;
  /** Streams opened whose agent has not answered yet: abandoned if the session leaves rotation. */
  readonly #unanswered = new Set<() => void>();
  #draining = false;

  constructor(
    readonly info: TunnelSessionInfo,
    private readonly http2: ClientHttp2Session,
    liveness: Partial<SessionLivenessSettings> = {},
    /** The tunnel protocol version the agent chose (2 knows the live edges and drains). */
    private readonly protocol: 1 | 2 = 1,
  ) {
    super();
    const end = (reason: string) => this.#markClosed(reason);
    http2.once('close', () => end('connection closed'));
    http2.once('goaway', () => end('agent went away'));
    http2.on('error', (error: Error) => end(`connection failed: ${error.message}`));
    this.#liveness = new SessionLiveness(
      {
        received: () => {
          // The socket is unbound once the session is destroyed; the last count stands.
          if (!http2.destroyed) this.#bytesRead = http2.socket.bytesRead;
          return this.#bytesRead;
        },
        ping: () => this.#ping(),
      },
      liveness,
    );
    this.#liveness.on('rotation', (inRotation) => {
      if (!inRotation) for (const abandon of [...this.#unanswered]) abandon();
      this.emit('rotation', inRotation);
    });
    this.#liveness.on('dead', (silence) => this.close(`the agent stopped answering pings (${silence})`));
  }

  get id(): string {
    return this.info.id;
  }

  /** Closed, or about to say so: a destroyed HTTP/2 session emits its `close` a moment later. */
  get closed(): boolean {
    return this.#closed || this.http2.destroyed || this.http2.closed;
  }

  get inRotation(): boolean {
    return !this.closed && !this.#draining && this.#liveness.inRotation;
  }

  get draining(): boolean {
    return this.#draining;
  }

  /**
   * A version 2 agent is sent an HTTP/2 GOAWAY: it opens its replacement on another edge, and this
   * session takes no new stream (an HTTP/2 client that sent GOAWAY opens none); open ones finish.
   */
  drain(): boolean {
    if (this.protocol < 2 || this.closed || this.#draining) return false;
    this.#draining = true;
    this.http2.goaway(http2Constants.NGHTTP2_NO_ERROR);
    this.emit('rotation', false);
    return true;
  }

  tellEdges(edges: LiveEdge[]): void {
    if (this.protocol < 2 || this.closed || this.#draining) return;
    // The agent acts on the newest list it got; a lost one is made good by the next change.
    requestAgent(this.http2, TunnelPath.edges, { edges }, COMMAND_TIMEOUT_MS).catch(() => {});
  }

  markSuspect(reason: string): void {
    if (!this.closed) this.#liveness.markSuspect(reason);
  }

  /**
   * Opens a stream that the agent connects to its forward target, telling it the public client's
   * address. Resolves once the agent has dialed it (200); rejects when the agent cannot (502), the
   * session is gone, or it leaves rotation before the agent answered (a frozen agent never will).
   */
  openStream(source: { ip: string; port: number }): Promise<Duplex> {
    if (this.closed) return Promise.reject(new Error(`session ${this.id} is closed`));
    if (this.#draining) return Promise.reject(new Error(`session ${this.id} is draining`));
    return new Promise((resolve, reject) => {
      let stream: ReturnType<ClientHttp2Session['request']>;
      try {
        stream = this.http2.request({
          ':method': 'POST',
          ':path': TunnelPath.connect,
          [SourceHeader.ip]: source.ip,
          [SourceHeader.port]: String(source.port),
        });
      } catch (error) {
        // The session is closing: the agent went away a moment ago.
        reject(new Error(`session ${this.id}: stream failed`, { cause: error }));
        return;
      }
      const settle = () => {
        stream.off('error', fail);
        this.#unanswered.delete(abandon);
      };
      const fail = (error: Error) => {
        settle();
        reject(new Error(`session ${this.id}: stream failed`, { cause: error }));
      };
      const abandon = () => {
        settle();
        stream.on('error', () => {}); // abandoned: whatever befalls it now concerns no one
        stream.close(http2Constants.NGHTTP2_CANCEL);
        reject(new Error(`session ${this.id} left rotation before its agent answered`));
      };
      stream.once('error', fail);
      this.#unanswered.add(abandon);
      stream.once('response', (headers) => {
        settle();
        const status = headers[':status'];
        if (status === 200) {
          resolve(stream);
          return;
        }
        stream.on('error', () => {}); // refused: whatever befalls it now concerns no one
        stream.close();
        reject(new Error(`session ${this.id}: the agent could not reach its target (HTTP ${status})`));
      });
    });
  }

  /**
   * Sends an agent command. Resolves when the agent accepted it (204); rejects with an
   * `AgentCommandRefused` carrying the agent's reason (409), or a plain error when the agent did
   * not answer or does not know the command.
   */
  async command(name: AgentCommandName): Promise<void> {
    if (this.#closed || this.http2.closed || this.http2.destroyed)
      throw new Error(`session ${this.id} is closed`);
    const answer = await requestAgent(this.http2, TunnelPath.command, { name }, COMMAND_TIMEOUT_MS);
    if (answer.status === 204) return;
    if (answer.status === 409 || answer.status === 400) {
      let body: unknown;
      try {
        body = JSON.parse(answer.text);
      } catch {
        body = undefined;
      }
      const refusal = commandRefusal.safeParse(body);
      if (refusal.success) throw new AgentCommandRefused(refusal.data.error);
    }
    if (answer.status === 404) throw new Error(`the agent does not support the ${name} command`);
    throw new Error(`the agent answered the ${name} command with HTTP ${answer.status}`);
  }

  /** Ends the session: the agent sees its connection close and reconnects (or not) as it chooses. */
  close(reason: string): void {
    if (this.#closed) return;
    this.http2.destroy();
    this.#markClosed(reason);
  }

  #ping(): Promise<void> {
    return new Promise((resolve, reject) => {
      try {
        const sent = this.http2.ping((error) => (error ? reject(error) : resolve()));
        if (!sent) reject(new Error('too many pings unanswered'));
      } catch (error) {
        reject(new Error(`session ${this.id}: ping failed`, { cause: error }));
      }
    });
  }

  #markClosed(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#liveness.stop();
    this.emit('closed', reason);
  }
}
