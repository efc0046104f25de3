import type { Logger } from 'pino';
import { bestMatch, hostOf } from '../lib/tls-names.js';
import type { EdgeConfig, EdgeTlsEdge } from '../schemas/edge-config.js';
import type { EdgeCertificates } from './edge-certificates.js';
import type { TlsRoute } from './listeners/tls-listener.js';
import { type ConnectionPolicy, compileConnectionPolicy } from './routing/connection-policy.js';
import { ALLOW_ALL, compileIpRestriction, type IpRestriction } from './routing/ip-policy.js';
import type { SessionPool } from './routing/session-pool.js';

interface CompiledTlsEdge {
  edge: EdgeTlsEdge;
  names: string[];
  restriction: IpRestriction;
  policy: ConnectionPolicy;
  labels: Record<string, string> | undefined;
  clientCas: string[] | undefined;
}

/**
 * Which TLS edge serves an SNI name, and how: the edge whose hostports' host matches (exact names
 * before wildcards), with its IP restriction, termination mode, minimum version and mutual-TLS CAs.
 * A terminating edge's certificate comes from `EdgeCertificates`.
 */
export class TlsRoutes {
  #edges: CompiledTlsEdge[] = [];

  constructor(
    private readonly pool: SessionPool,
    private readonly certificates: EdgeCertificates,
    private readonly log: Logger,
  ) {}

  apply(config: EdgeConfig): void {
    this.#edges = config.tls_edges.map((edge) => ({
      edge,
      names: edge.hostports.map(hostOf),
      restriction:
        edge.ip_restriction?.enabled === true
          ? compileIpRestriction(edge.ip_restriction.ip_policy_ids, config.ip_policies)
          : ALLOW_ALL,
      policy: compileConnectionPolicy(
        edge.policy,
        (reason) =>
          this.log.error(
            { edgeId: edge.id, reason },
            'TLS edge policy unreadable: refusing every connection',
          ),
        (message) => this.log.warn({ edgeId: edge.id, message }, 'policy expression failed'),
      ),
      labels: edge.backend?.enabled
        ? config.backends.find((backend) => backend.id === edge.backend?.backend_id)?.labels
        : undefined,
      clientCas:
        edge.mutual_tls?.enabled === true
          ? edge.mutual_tls.certificate_authority_ids.flatMap(
              (id) => config.certificate_authorities.find((ca) => ca.id === id)?.ca_pem ?? [],
            )
          : undefined,
    }));
  }

  async resolve(
    serverName: string | undefined,
    clientIp: string,
    clientPort: number,
  ): Promise<TlsRoute | undefined> {
    if (!serverName) return undefined;
    const compiled = bestMatch(this.#edges, (edge) => edge.names, serverName);
    if (!compiled) return undefined;
    const { edge, labels } = compiled;
    const termination = edge.tls_termination;
    const passthrough = termination?.enabled !== false && termination?.terminate_at === 'upstream';
    const connect = (source: { ip: string; port: number }) =>
      labels
        ? this.pool.connect(labels, source)
        : Promise.reject(new Error(`edge ${edge.id} has no backend`));
    const allowed =
      compiled.restriction.allows(clientIp) && compiled.policy.allows({ ip: clientIp, port: clientPort });
    if (passthrough || !allowed) return { edgeId: edge.id, allowed, mode: 'passthrough', connect };
    return {
      edgeId: edge.id,
      allowed,
      mode: 'terminate',
      certificate: await this.certificates.for(serverName, edge.id),
      minVersion: termination?.min_version ?? '1.2',
      ...(compiled.clientCas ? { clientCas: compiled.clientCas } : {}),
      connect,
    };
  }
}
