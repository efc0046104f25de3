import type { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';

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

/**
 * One online session of either transport (`edgeward agent` over HTTP/2, or OpenSSH over SSH). The
 * edge carries each public connection as a duplex stream the session opens to its agent. Emits
 * `closed` once, when the agent's connection ends for whatever reason.
 */
export interface TunnelSession extends EventEmitter<{ closed: [reason: string] }> {
  readonly info: TunnelSessionInfo;
  readonly closed: boolean;
  /**
   * A stream that the agent connects to its forward target; `source` is the public client's
   * address, for transports that can tell the agent. Rejects when the agent cannot reach it.
   */
  openStream(source: { ip: string; port: number }): Promise<Duplex>;
  /** Sends an agent command; resolves when the agent accepted it, rejects with its reason. */
  command(name: AgentCommandName): Promise<void>;
  /** Ends the session (the agent sees its connection close). */
  close(reason: string): void;
}
