import type { KubernetesObject } from '@kubernetes/client-node';
import { nameMatches } from '../../../lib/tls-names.js';
import type { EventReporter } from '../../runtime/events.js';
import type { IngressCertificate } from './desired.js';

/**
 * Whether the certificate of a `spec.tls` Secret covers the hosts listed with it. Edges pick a
 * certificate by the name a client asks for, so the hosts of `spec.tls` choose nothing: a host the
 * certificate does not name gets another certificate of the server (ACME's, or a self-signed one),
 * which the Ingress's owner should hear of.
 */

/** The TLSCertificate's status, as far as coverage needs it. */
export interface UploadedCertificate {
  serialNumber?: string;
  subjectAlternativeNames?: { dnsNames?: string[] };
}

/** The hosts of `certificate` that the uploaded certificate's names do not cover. */
export function uncoveredHosts(certificate: IngressCertificate, uploaded: UploadedCertificate): string[] {
  const names = uploaded.subjectAlternativeNames?.dnsNames ?? [];
  return certificate.hosts.filter((host) => !names.some((pattern) => nameMatches(pattern, host)));
}

/**
 * A Warning event `CertificateNotCovering` on the Ingress for each of its certificates (once Ready)
 * that leaves a host of its `spec.tls` entry uncovered: once per Ingress and certificate serial, so
 * a resync says nothing new and a renewal that still misses the host says it again.
 */
export class CoverageWarnings {
  /** `<Ingress key>|<TLSCertificate>` -> `<Ingress uid> <serial>` reported. */
  readonly #reported = new Map<string, string>();

  constructor(private readonly events: EventReporter) {}

  async report(
    ingress: KubernetesObject,
    certificates: readonly IngressCertificate[],
    /** The Ingress's own Ready TLSCertificate of that name, from the cache (undefined otherwise). */
    uploadedOf: (name: string) => UploadedCertificate | undefined,
  ): Promise<void> {
    const key = `${ingress.metadata?.namespace}/${ingress.metadata?.name}`;
    for (const certificate of certificates) {
      const uploaded = uploadedOf(certificate.name);
      if (!uploaded) continue;
      const uncovered = uncoveredHosts(certificate, uploaded);
      const seen = `${ingress.metadata?.uid} ${uploaded.serialNumber ?? ''}`;
      const reportKey = `${key}|${certificate.name}`;
      if (uncovered.length === 0 || this.#reported.get(reportKey) === seen) continue;
      await this.events.warning(
        ingress,
        'CertificateNotCovering',
        `the certificate of Secret ${certificate.secretName} (serial ${uploaded.serialNumber}) does not name ${uncovered.join(', ')}: the edge serves ${uncovered.length === 1 ? 'it' : 'them'} another certificate`,
      );
      this.#reported.set(reportKey, seen);
    }
  }

  /** The Ingress `namespace/name` is gone: forget what was said of it. */
  forget(ingressKey: string): void {
    for (const key of this.#reported.keys()) {
      if (key.startsWith(`${ingressKey}|`)) this.#reported.delete(key);
    }
  }
}
