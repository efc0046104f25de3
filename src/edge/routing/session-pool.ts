import type { Duplex } from 'node:stream';
import type { TunnelSession } from './tunnel-session.js';

/** Why a connection found no agent: said to logs and metrics, never to the public client. */
export class NoOnlineSession extends Error {}

function carries(session: TunnelSession, labels: Readonly<Record<string, string>>): boolean {
  return Object.entries(labels).every(([key, value]) => session.info.labels[key] === value);
}

/**
 * The online sessions of this edge, by tunnel group: a backend's labels select every session whose
 * labels include them. Connections are spread round robin; when the chosen session fails to open a
 * stream (its agent just went, or cannot reach its target), the next one is tried.
 */
export class SessionPool {
  readonly #sessions = new Map<string, TunnelSession>();
  #next = 0;

  add(session: TunnelSession): void {
    this.#sessions.set(session.info.id, session);
    session.once('closed', () => {
      if (this.#sessions.get(session.info.id) === session) this.#sessions.delete(session.info.id);
    });
  }

  get(id: string): TunnelSession | undefined {
    return this.#sessions.get(id);
  }

  all(): TunnelSession[] {
    return [...this.#sessions.values()];
  }

  /** Sessions of the tunnel group `labels`; an empty selector selects none (a backend always has labels). */
  group(labels: Readonly<Record<string, string>>): TunnelSession[] {
    if (Object.keys(labels).length === 0) return [];
    return this.all().filter((session) => !session.closed && carries(session, labels));
  }

  async connect(
    labels: Readonly<Record<string, string>>,
    source: { ip: string; port: number },
  ): Promise<Duplex> {
    const group = this.group(labels);
    if (group.length === 0) throw new NoOnlineSession('no online session carries the backend labels');
    const start = this.#next++ % group.length;
    const failures: unknown[] = [];
    for (let offset = 0; offset < group.length; offset++) {
      const session = group[(start + offset) % group.length] as TunnelSession;
      if (session.closed) continue;
      try {
        return await session.openStream(source);
      } catch (error) {
        failures.push(error);
      }
    }
    throw new NoOnlineSession(`every session of the group failed (${failures.length} tried)`, {
      cause: failures.at(-1),
    });
  }
}
