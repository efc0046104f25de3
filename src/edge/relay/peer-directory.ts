import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import type { EdgePeer } from '../../schemas/edge-config.js';
import type { LiveEdge } from '../../schemas/tunnel-protocol.js';
import type { RelayClient } from './relay-client.js';

/** A session another edge holds, reachable through that edge's relay. */
export interface RemoteSession {
  edgeId: string;
  sessionId: string;
  openStream(source: { ip: string; port: number }): Promise<Duplex>;
}

function carries(
  labels: Readonly<Record<string, string>>,
  selector: Readonly<Record<string, string>>,
): boolean {
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

/**
 * The live edges and the sessions they hold, as the control plane's feed last said (`peers`): where
 * a connection goes when this edge holds no session of its group, and which edges this edge's
 * agents are told about. Emits `edges` when the set of edges (or their addresses) changes.
 */
export class PeerDirectory extends EventEmitter<{ edges: [LiveEdge[]] }> {
  #peers: EdgePeer[] = [];
  #edgesKey = '';

  constructor(
    private readonly selfId: string,
    private readonly relay: RelayClient,
  ) {
    super();
  }

  apply(peers: EdgePeer[]): void {
    this.#peers = peers;
    this.relay.retain(
      new Set(peers.flatMap((peer) => (peer.id !== this.selfId && peer.relay_addr ? [peer.relay_addr] : []))),
    );
    const edges = this.liveEdges();
    const key = JSON.stringify(edges);
    if (key !== this.#edgesKey) {
      this.#edgesKey = key;
      this.emit('edges', edges);
    }
  }

  /** Every live edge (this one included), as agents are told about them. */
  liveEdges(): LiveEdge[] {
    const edges = this.#peers.map((peer) => ({ id: peer.id, tunnel_addr: peer.tunnel_addr }));
    if (!edges.some((edge) => edge.id === this.selfId)) edges.push({ id: this.selfId, tunnel_addr: null });
    return edges;
  }

  /** How many live edges there are (this one included). */
  get edgeCount(): number {
    return this.liveEdges().length;
  }

  /** Sessions of other edges that carry `selector`, reachable through their relay. */
  remoteSessions(selector: Readonly<Record<string, string>>): RemoteSession[] {
    if (Object.keys(selector).length === 0) return [];
    const sessions: RemoteSession[] = [];
    for (const peer of this.#peers) {
      const relayAddr = peer.relay_addr;
      if (peer.id === this.selfId || !relayAddr) continue;
      for (const session of peer.sessions) {
        if (!carries(session.labels, selector)) continue;
        sessions.push({
          edgeId: peer.id,
          sessionId: session.id,
          openStream: (source) => this.relay.open(relayAddr, session.id, source),
        });
      }
    }
    return sessions;
  }
}
