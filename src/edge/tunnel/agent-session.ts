import { EventEmitter } from 'node:events';
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import type { AgentHello } from './protocol.js';
import { TunnelPath } from './protocol.js';

/** What the edge knows of one connected agent: its session id, who it is, where it came from. */
export interface SessionInfo {
  id: string;
  /** The credential (tunnel or SSH) it authenticated with. */
  credentialId: string;
  hello: Omit<AgentHello, 'authtoken'>;
  /** Source address of the agent's connection. */
  ip: string;
  startedAt: Date;
}

/**
 * One online agent: carried connections are HTTP/2 streams the edge opens to it. Emits `closed`
 * once, when the agent's connection ends for whatever reason.
 */
export class AgentSession extends EventEmitter<{ closed: [reason: string] }> {
  #closed = false;

  constructor(
    readonly info: SessionInfo,
    private readonly http2: ClientHttp2Session,
  ) {
    super();
    const end = (reason: string) => this.#markClosed(reason);
    http2.once('close', () => end('connection closed'));
    http2.once('goaway', () => end('agent went away'));
    http2.on('error', (error: Error) => end(`connection failed: ${error.message}`));
  }

  get id(): string {
    return this.info.id;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Opens a stream that the agent connects to its forward target. Resolves once the agent has
   * dialed it (200); rejects when the agent cannot (502) or the session is gone.
   */
  openStream(): Promise<ClientHttp2Stream> {
    if (this.#closed) return Promise.reject(new Error(`session ${this.id} is closed`));
    return new Promise((resolve, reject) => {
      const stream = this.http2.request({ ':method': 'POST', ':path': TunnelPath.connect });
      const fail = (error: Error) => reject(new Error(`session ${this.id}: stream failed`, { cause: error }));
      stream.once('error', fail);
      stream.once('response', (headers) => {
        stream.off('error', fail);
        const status = headers[':status'];
        if (status === 200) {
          resolve(stream);
          return;
        }
        stream.close();
        reject(new Error(`session ${this.id}: the agent could not reach its target (HTTP ${status})`));
      });
    });
  }

  /** Ends the session: the agent sees its connection close and reconnects (or not) as it chooses. */
  close(reason: string): void {
    if (this.#closed) return;
    this.http2.destroy();
    this.#markClosed(reason);
  }

  #markClosed(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.emit('closed', reason);
  }
}
