import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import type { RemoteSession } from '../relay/peer-directory.js';
import type { TunnelSession } from './tunnel-session.js';

/** Why a connection found no agent: said to logs and metrics, never to the public client. */
export class NoOnlineSession extends Error {}

/** A stream to an agent of the group, and the session of this edge it belongs to (none when another edge's session carries it, through the relay). */
export interface OpenedStream {
  stream: Duplex;
  session: TunnelSession | undefined;
}

function carries(session: TunnelSession, labels: Readonly<Record<string, string>>): boolean {
  return Object.entries(labels).every(([key, value]) => session.info.labels[key] === value);
}

/**
 * The online sessions of this edge, by tunnel group: a backend's labels select every session whose
 * labels include them. Connections are spread round robin over the sessions in rotation; when the
 * chosen session fails to open a stream (its agent just went, or cannot reach its target), the next
 * one is tried. Sessions out of rotation (an agent overdue with a ping's answer, or suspect) are
 * tried last, only when no session in rotation could take the connection. Emits `outOfRotation`
 * when a session leaves rotation or closes, for whoever keeps idle streams of it.
 */
export class SessionPool extends EventEmitter<{ outOfRotation: [session: TunnelSession] }> {
  readonly #sessions = new Map<string, TunnelSession>();
  #next = 0;
  #nextRemote = 0;
  #remote: { remoteSessions(labels: Readonly<Record<string, string>>): RemoteSession[] } | undefined;

  /**
   * Where a connection goes when no session of this edge can take it: the sessions other edges
   * hold, through their relay (`relay/peer-directory.ts`).
   */
  setRemote(remote: { remoteSessions(labels: Readonly<Record<string, string>>): RemoteSession[] }): void {
    this.#remote = remote;
  }

  add(session: TunnelSession): void {
    this.#sessions.set(session.info.id, session);
    const onRotation = (inRotation: boolean) => {
      if (!inRotation) this.emit('outOfRotation', session);
    };
    session.on('rotation', onRotation);
    session.once('closed', () => {
      session.off('rotation', onRotation);
      if (this.#sessions.get(session.info.id) === session) this.#sessions.delete(session.info.id);
      this.emit('outOfRotation', session);
    });
  }

  get(id: string): TunnelSession | undefined {
    return this.#sessions.get(id);
  }

  all(): TunnelSession[] {
    return [...this.#sessions.values()];
  }

  /**
   * Sessions of the tunnel group `labels` that may take a new stream (not closed, not draining); an
   * empty selector selects none (a backend always has labels).
   */
  group(labels: Readonly<Record<string, string>>): TunnelSession[] {
    if (Object.keys(labels).length === 0) return [];
    return this.all().filter((session) => !session.closed && !session.draining && carries(session, labels));
  }

  /** A stream to an agent of the group, from the first session that can open one. */
  async connect(
    labels: Readonly<Record<string, string>>,
    source: { ip: string; port: number },
  ): Promise<Duplex> {
    return (await this.open(labels, source)).stream;
  }

  /**
   * A stream to an agent of the group and the session it belongs to: the sessions in rotation
   * round robin, then those out of rotation (better a slow agent than none).
   */
  async open(
    labels: Readonly<Record<string, string>>,
    source: { ip: string; port: number },
  ): Promise<OpenedStream> {
    const group = this.group(labels);
    const failures: unknown[] = [];
    for (const session of this.#inTurn(group)) {
      if (session.closed || session.draining) continue;
      try {
        return { stream: await session.openStream(source), session };
      } catch (error) {
        failures.push(error);
      }
    }
    // None of this edge's sessions could: another edge's, through its relay.
    const remote = this.#remote?.remoteSessions(labels) ?? [];
    const start = remote.length === 0 ? 0 : this.#nextRemote++ % remote.length;
    for (const session of [...remote.slice(start), ...remote.slice(0, start)]) {
      try {
        return { stream: await session.openStream(source), session: undefined };
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length === 0) throw new NoOnlineSession('no online session carries the backend labels');
    throw new NoOnlineSession(`every session of the group failed (${failures.length} tried)`, {
      cause: failures.at(-1),
    });
  }

  /** The order a new connection tries the group's sessions in. */
  #inTurn(group: TunnelSession[]): TunnelSession[] {
    const inRotation = group.filter((session) => session.inRotation);
    const start = inRotation.length === 0 ? 0 : this.#next++ % inRotation.length;
    const lastResort = group.filter((session) => !session.inRotation);
    return [...inRotation.slice(start), ...inRotation.slice(0, start), ...lastResort];
  }
}
