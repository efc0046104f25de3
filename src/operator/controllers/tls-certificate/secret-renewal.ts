import type { TlsCertificate } from '../../../schemas/tls-certificates.js';
import { ADOPT_ANNOTATION, type ManagedObject, type Replacement } from '../managed/managed-resource.js';
import { TerminalSyncError } from '../managed/sync-errors.js';
import { sameChain } from '../shared/tls-pair.js';
import type { SecretCertificate } from '../shared/tls-secret-certificate.js';

/**
 * When a TLSCertificate's Secret and the server's certificate part ways: a renewal (cert-manager
 * wrote a new certificate) replaces the server's, routinely; anything else that finds them apart
 * says why.
 */

const describe = (certificate: { serial: string; notAfter: string }) =>
  `serial ${certificate.serial}, not after ${certificate.notAfter}`;

/** The replacement a Secret holding another chain than the server's calls for, or undefined. */
export function renewalOf(secret: SecretCertificate, remote: TlsCertificate): Replacement | undefined {
  if (sameChain(secret.chainPem, remote.certificate_pem)) return undefined;
  return {
    because: `Secret ${secret.secretName} holds another certificate (${describe({
      serial: secret.serialNumber,
      notAfter: secret.notAfter,
    })}; the server's: ${describe({ serial: remote.serial_number, notAfter: remote.not_after })})`,
    routine: true,
  };
}

/**
 * Why a server certificate that was not replaced differs from the Secret, or undefined when it does
 * not: an adopted one is never replaced (a terminal report until the Secret or the annotation
 * changes); one a lost create made before the Secret changed is retried, and the next reconcile,
 * which finds it in status, replaces it.
 */
export function secretMismatch(
  object: ManagedObject,
  secret: SecretCertificate,
  remote: TlsCertificate,
): Error | undefined {
  if (sameChain(secret.chainPem, remote.certificate_pem)) return undefined;
  if (!object.status?.id && object.metadata?.annotations?.[ADOPT_ANNOTATION]) {
    return new TerminalSyncError(
      'CertificateMismatch',
      `spec.secretRef: ${remote.id} holds another certificate than Secret ${secret.secretName}; an adopted certificate is never replaced (remove ${ADOPT_ANNOTATION} to upload the Secret's)`,
    );
  }
  return new Error(
    `spec.secretRef: ${remote.id} holds another certificate than Secret ${secret.secretName} (changed meanwhile): replacing it at the next attempt`,
  );
}
