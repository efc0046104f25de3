import type { Logger } from 'pino';
import type { EdgeConfig, EdgeTlsEdge } from '../schemas/edge-config.js';
import { selfSignedCertificate } from '../server/crypto/x509.js';
import type { TlsRoute } from './listeners/tls-listener.js';
import { bestMatch, hostOf } from './routing/hostnames.js';
import { ALLOW_ALL, compileIpRestriction, type IpRestriction } from './routing/ip-policy.js';
import type { SessionPool } from './routing/session-pool.js';

type Certificate = { cert: string; key: string };

/** Names under a wildcard are unbounded: keep the generated certificates of this many. */
const MAX_GENERATED = 1000;

interface CompiledTlsEdge {
  edge: EdgeTlsEdge;
  names: string[];
  restriction: IpRestriction;
  labels: Record<string, string> | undefined;
  clientCas: string[] | undefined;
}

/**
 * Which TLS edge serves an SNI name, and how: the edge whose hostports' host matches (exact names
 * before wildcards), with its IP restriction, termination mode, minimum version and mutual-TLS CAs.
 * A terminating edge uses an uploaded TLS certificate that covers the name; with none, the edge
 * generates a self-signed one for that name once and logs that it did.
 */
export class TlsRoutes {
  #edges: CompiledTlsEdge[] = [];
  #certificates: EdgeConfig['tls_certificates'] = [];
  readonly #generated = new Map<string, Promise<Certificate>>();

  constructor(
    private readonly pool: SessionPool,
    private readonly log: Logger,
  ) {}

  apply(config: EdgeConfig): void {
    this.#certificates = config.tls_certificates;
    this.#edges = config.tls_edges.map((edge) => ({
      edge,
      names: edge.hostports.map(hostOf),
      restriction:
        edge.ip_restriction?.enabled === true
          ? compileIpRestriction(edge.ip_restriction.ip_policy_ids, config.ip_policies)
          : ALLOW_ALL,
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

  async resolve(serverName: string | undefined, clientIp: string): Promise<TlsRoute | undefined> {
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
    const allowed = compiled.restriction.allows(clientIp);
    if (passthrough || !allowed) return { edgeId: edge.id, allowed, mode: 'passthrough', connect };
    return {
      edgeId: edge.id,
      allowed,
      mode: 'terminate',
      certificate: await this.#certificateFor(serverName, edge.id),
      minVersion: termination?.min_version ?? '1.2',
      ...(compiled.clientCas ? { clientCas: compiled.clientCas } : {}),
      connect,
    };
  }

  async #certificateFor(serverName: string, edgeId: string): Promise<Certificate> {
    const uploaded = bestMatch(this.#certificates, (certificate) => certificate.dns_names, serverName);
    if (uploaded) return { cert: uploaded.certificate_pem, key: uploaded.private_key_pem };
    let generated = this.#generated.get(serverName);
    if (!generated) {
      generated = selfSignedCertificate({
        commonName: serverName,
        dnsNames: [serverName],
        validDays: 90,
      }).then((pair) => {
        this.log.warn(
          { edgeId, serverName },
          'no uploaded TLS certificate covers this name: serving a self-signed certificate generated for it',
        );
        return { cert: pair.certificatePem, key: pair.privateKeyPem };
      });
      this.#generated.set(serverName, generated);
      if (this.#generated.size > MAX_GENERATED) {
        const oldest = this.#generated.keys().next().value;
        if (oldest !== undefined) this.#generated.delete(oldest);
      }
    }
    return generated;
  }
}
