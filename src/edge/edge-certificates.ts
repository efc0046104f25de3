import type { Logger } from 'pino';
import { selfSignedCertificate } from '../crypto/x509.js';
import { bestMatch } from '../lib/tls-names.js';
import type { EdgeConfig } from '../schemas/edge-config.js';

export type Certificate = { cert: string; key: string };

/** Names under a wildcard are unbounded: keep the generated certificates of this many. */
const MAX_GENERATED = 1000;

/**
 * The server certificate for a name, for TLS and HTTPS edges alike: an uploaded TLS certificate
 * that covers it, else a self-signed one generated for that name once (and logged).
 */
export class EdgeCertificates {
  #certificates: EdgeConfig['tls_certificates'] = [];
  #agentIngressNames = new Set<string>();
  readonly #generated = new Map<string, Promise<Certificate>>();

  constructor(private readonly log: Logger) {}

  apply(config: EdgeConfig): void {
    this.#certificates = config.tls_certificates;
    this.#agentIngressNames = new Set(config.agent_ingress_domains.map((name) => name.toLowerCase()));
  }

  /**
   * For the tunnel endpoint: the certificate of an agent ingress's name an agent dialed (issued by
   * ACME or uploaded); undefined for any other name, which gets the tunnel certificate.
   */
  forAgentIngress(serverName: string): Certificate | undefined {
    const name = serverName.toLowerCase();
    if (!this.#agentIngressNames.has(name)) return undefined;
    const covering = bestMatch(this.#certificates, (certificate) => certificate.dns_names, name);
    return covering && { cert: covering.certificate_pem, key: covering.private_key_pem };
  }

  async for(serverName: string, edgeId: string): Promise<Certificate> {
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
