import type net from 'node:net';
import { pipeline } from 'node:stream';
import type { Logger } from 'pino';
import type { EdgeConfig } from '../schemas/edge-config.js';
import type { EdgeMetrics } from './edge-metrics.js';
import { type ConnectionPolicy, compileConnectionPolicy } from './routing/connection-policy.js';
import { ALLOW_ALL, compileIpRestriction, type IpRestriction, normalizeIp } from './routing/ip-policy.js';
import { NoOnlineSession, type SessionPool } from './routing/session-pool.js';

interface TcpRoute {
  edgeId: string;
  restriction: IpRestriction;
  policy: ConnectionPolicy;
  labels: Record<string, string> | undefined;
}

/**
 * TCP edges: which edge a public port belongs to (reserved addresses of this edge's region and
 * port range), its traffic policy and IP restriction, and the connections carried to its backend's
 * sessions, kept so a drain can wait for them.
 */
export class TcpRoutes {
  #routes = new Map<number, TcpRoute>();
  readonly #carried = new Set<net.Socket>();

  constructor(
    private readonly pool: SessionPool,
    private readonly metrics: EdgeMetrics,
    private readonly log: Logger,
    private readonly options: { region: string; portRange: { min: number; max: number } },
  ) {}

  /** The ports the configuration's TCP edges have on this edge. */
  ports(): number[] {
    return [...this.#routes.keys()];
  }

  apply(config: EdgeConfig): void {
    const routes = new Map<number, TcpRoute>();
    const { min, max } = this.options.portRange;
    for (const edge of config.tcp_edges) {
      const restriction =
        edge.ip_restriction?.enabled === true
          ? compileIpRestriction(edge.ip_restriction.ip_policy_ids, config.ip_policies)
          : ALLOW_ALL;
      const labels = edge.backend?.enabled
        ? config.backends.find((candidate) => candidate.id === edge.backend?.backend_id)?.labels
        : undefined;
      const policy = compileConnectionPolicy(
        edge.policy,
        (reason) =>
          this.log.error(
            { edgeId: edge.id, reason },
            'TCP edge policy unreadable: refusing every connection',
          ),
        (message) => this.log.warn({ edgeId: edge.id, message }, 'policy expression failed'),
      );
      for (const hostport of edge.hostports) {
        const addr = config.reserved_addrs.find((candidate) => candidate.addr === hostport);
        // Only reserved addresses of this edge's region and port range are this edge's to serve.
        if (!addr || addr.region !== this.options.region) continue;
        const port = Number(hostport.slice(hostport.lastIndexOf(':') + 1));
        if (port < min || port > max) continue;
        routes.set(port, { edgeId: edge.id, restriction, policy, labels });
      }
    }
    this.#routes = routes;
  }

  /** Resolves once no connection is carried any more (the edge is draining). */
  async drained(): Promise<void> {
    while (this.#carried.size > 0) await new Promise((resolve) => setTimeout(resolve, 50));
  }

  /** Cuts every carried connection (the drain's time is up). */
  cutCarried(): void {
    for (const socket of this.#carried) socket.destroy();
  }

  serve(port: number, socket: net.Socket): void {
    const route = this.#routes.get(port);
    const ip = normalizeIp(socket.remoteAddress ?? '');
    this.log.debug({ port, ip, edgeId: route?.edgeId }, 'TCP connection accepted');
    socket.on('error', () => {}); // a client reset ends its own connection only
    if (!route) {
      socket.destroy();
      return;
    }
    if (!route.policy.allows({ ip, port: socket.remotePort ?? 0 })) {
      this.metrics.connections.inc({ edge_id: route.edgeId, outcome: 'policy_denied' });
      this.log.info({ edgeId: route.edgeId, ip }, 'connection refused by the traffic policy');
      socket.destroy();
      return;
    }
    if (!route.restriction.allows(ip)) {
      this.metrics.connections.inc({ edge_id: route.edgeId, outcome: 'ip_denied' });
      this.log.info({ edgeId: route.edgeId, ip }, 'connection refused by IP restriction');
      socket.destroy();
      return;
    }
    this.#carry(route.edgeId, route.labels, socket, { ip, port: socket.remotePort ?? 0 });
  }

  /** Carries one public connection to an agent of `labels`; closes it cleanly when none is online. */
  #carry(
    edgeId: string,
    labels: Record<string, string> | undefined,
    socket: net.Socket,
    source: { ip: string; port: number },
  ): void {
    this.#carried.add(socket);
    socket.once('close', () => this.#carried.delete(socket));
    socket.pause();
    if (!labels) {
      this.metrics.connections.inc({ edge_id: edgeId, outcome: 'no_backend' });
      socket.end();
      return;
    }
    this.pool.connect(labels, source).then(
      (stream) => {
        this.metrics.connections.inc({ edge_id: edgeId, outcome: 'carried' });
        this.log.debug({ edgeId, ip: source.ip }, 'carrying a connection');
        // Counted once at the end: a counter per chunk would cost more than the copy.
        socket.once('close', () => {
          this.metrics.bytes.inc({ edge_id: edgeId, direction: 'in' }, socket.bytesRead);
          this.metrics.bytes.inc({ edge_id: edgeId, direction: 'out' }, socket.bytesWritten);
        });
        pipeline(socket, stream, socket, () => {
          socket.destroy();
          stream.destroy();
        });
      },
      (error: unknown) => {
        const outcome = error instanceof NoOnlineSession ? 'no_session' : 'failed';
        this.metrics.connections.inc({ edge_id: edgeId, outcome });
        this.log.info(
          { edgeId, ip: source.ip, reason: error instanceof Error ? error.message : String(error) },
          'connection not carried',
        );
        socket.end();
      },
    );
  }
}
