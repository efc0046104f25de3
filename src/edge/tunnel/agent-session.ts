import { EventEmitter } from 'node:events';
import type { ClientHttp2Session } from 'node:http2';
import type { Duplex } from 'node:stream';
import { commandRefusal, SourceHeader, TunnelPath } from '../../schemas/tunnel-protocol.js';
import type { AgentCommandName, TunnelSession, TunnelSessionInfo } from '../routing/tunnel-session.js';
import { requestAgent } from './request.js';

/** The agent declined a command (409); the message is the agent's own, meant for whoever asked. */
export class AgentCommandRefused extends Error {}

const COMMAND_TIMEOUT_MS = 10_000;

/**
 * One online `edgeward agent` (transport `svc/2`): carried connections are HTTP/2 streams the edge
 * opens to it, commands are requests on the same connection. Emits `closed` once, when the agent's
 * connection ends for whatever reason.
 */
export class AgentSession extends EventEmitter<{ closed: [reason: string] }> implements TunnelSession {
  #closed = false;

  constructor(
    readonly info: TunnelSessionInfo,
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
   * Opens a stream that the agent connects to its forward target, telling it the public client's
   * address. Resolves once the agent has dialed it (200); rejects when the agent cannot (502) or
   * the session is gone.
   */
  openStream(source: { ip: string; port: number }): Promise<Duplex> {
    if (this.#closed) return Promise.reject(new Error(`session ${this.id} is closed`));
    return new Promise((resolve, reject) => {
      const stream = this.http2.request({
        ':method': 'POST',
        ':path': TunnelPath.connect,
        [SourceHeader.ip]: source.ip,
        [SourceHeader.port]: String(source.port),
      });
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

  #markClosed(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.emit('closed', reason);
  }
}
