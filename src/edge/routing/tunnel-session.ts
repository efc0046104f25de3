import type { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import type { LiveEdge } from '../../schemas/tunnel-protocol.js';

/** What the edge knows of one online session, whichever transport carries it. */
export interface TunnelSessionInfo {
  id: string;
  /** The tunnel credential (`cr_`) or SSH credential (`sshcr_`) it authenticated with. */
  credentialId: string;
  transport: 'svc/2' | 'ssh';
  agentVersion: string;
  os: string;
  metadata: string | undefined;
  /** The labels it binds: its tunnel group. */
  labels: Record<string, string>;
  /** Source address of the agent's connection. */
  ip: string;
  startedAt: Date;
}

/** An agent command the session's transport may or may not support. */
export type AgentCommandName = 'restart' | 'stop' | 'update';

/** What every session emits: `closed` once, and `rotation` when it leaves or rejoins rotation. */
export type TunnelSessionEvents = { closed: [reason: string]; rotation: [inRotation: boolean] };

/**
 * One online session of either transport (`edgeward agent` over HTTP/2, or OpenSSH over SSH). The
 * edge carries each public connection as a duplex stream the session opens to its agent. Emits
 * `closed` once, when the agent's connection ends for whatever reason (or it stopped answering
 * pings), and `rotation` when its liveness (`session-liveness.ts`) takes it out of rotation or back.
 */
export interface TunnelSession extends EventEmitter<TunnelSessionEvents> {
  readonly info: TunnelSessionInfo;
  readonly closed: boolean;
  /**
   * Whether new connections and requests may go to it: not while its agent is overdue with an
   * answer, nor while it is suspect, nor once closed.
   */
  readonly inRotation: boolean;
  /**
   * Takes it out of rotation until its agent shows it is alive (a stream of it failed: the agent
   * may be gone); it pings the agent at once when the transport allows.
   */
  markSuspect(reason: string): void;
  /**
   * The edge is draining it: its agent was told to move (HTTP/2 GOAWAY), and it takes no new
   * stream; streams already open finish.
   */
  readonly draining: boolean;
  /** Starts draining it; false when the transport cannot move its agent (it ends with the edge). */
  drain(): boolean;
  /** Tells the agent which edges are live, when its protocol has a word for it (version 2). */
  tellEdges(edges: LiveEdge[]): void;
  /**
   * A stream that the agent connects to its forward target; `source` is the public client's
   * address, for transports that can tell the agent. Rejects when the agent cannot reach it, and
   * when the session leaves rotation before the agent answered (nothing was carried yet, so the
   * connection may go to another session).
   */
  openStream(source: { ip: string; port: number }): Promise<Duplex>;
  /** Sends an agent command; resolves when the agent accepted it, rejects with its reason. */
  command(name: AgentCommandName): Promise<void>;
  /** Ends the session (the agent sees its connection close). */
  close(reason: string): void;
}
