import { Counter, Gauge, Registry } from 'prom-client';

/**
 * The edge's Prometheus metrics. Labels name edges and outcomes, never addresses, tokens or keys,
 * so their number stays bounded by the configuration.
 */
export class EdgeMetrics {
  readonly registry = new Registry();
  readonly connections = new Counter({
    name: 'edgeward_edge_connections_total',
    help: 'Public connections accepted by the edge, by edge and outcome',
    labelNames: ['edge_id', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly bytes = new Counter({
    name: 'edgeward_edge_bytes_total',
    help: 'Bytes carried between public clients and agents, by edge and direction',
    labelNames: ['edge_id', 'direction'] as const,
    registers: [this.registry],
  });
  readonly sessions = new Gauge({
    name: 'edgeward_edge_tunnel_sessions',
    help: 'Tunnel sessions online on this edge, by transport',
    labelNames: ['transport'] as const,
    registers: [this.registry],
  });
  readonly sessionsRefused = new Counter({
    name: 'edgeward_edge_tunnel_sessions_refused_total',
    help: 'Agents refused a session, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly feedConnected = new Gauge({
    name: 'edgeward_edge_control_plane_connected',
    help: '1 while the configuration feed from the control plane is open',
    registers: [this.registry],
  });
  readonly httpRequests = new Counter({
    name: 'edgeward_edge_http_requests_total',
    help: 'Requests served by HTTPS edges, by edge, route and outcome (the status class, or what the edge answered itself)',
    labelNames: ['edge_id', 'route_id', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly routesUnreadable = new Gauge({
    name: 'edgeward_edge_routes_unreadable',
    help: 'HTTPS routes whose module configuration this edge cannot read: they answer 503 (fail closed)',
    registers: [this.registry],
  });
  readonly circuitBreakerOpen = new Gauge({
    name: 'edgeward_edge_circuit_breaker_open',
    help: '1 while the circuit breaker of a route is open (tripped) or half-open',
    labelNames: ['route_id'] as const,
    registers: [this.registry],
  });
  readonly relayed = new Counter({
    name: 'edgeward_edge_relayed_connections_total',
    help: 'Connections other edges passed to this edge for a session it holds, by outcome (carried, unknown-session, unreachable)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly configApplied = new Counter({
    name: 'edgeward_edge_config_applied_total',
    help: 'Configuration snapshots applied',
    registers: [this.registry],
  });
}
