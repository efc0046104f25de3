import { X509Certificate } from 'node:crypto';

/**
 * Whether two PEM texts start with the same certificate. The server keeps only the re-encoded
 * DER, so line wrapping or comments in the spec must not read as a difference.
 */
export function sameLeafCertificate(specPem: string, serverPem: string): boolean {
  try {
    return new X509Certificate(specPem).raw.equals(new X509Certificate(serverPem).raw);
  } catch {
    // Unparseable here: the server refuses such a spec on create; on adoption it is a mismatch.
    return false;
  }
}

/** The X.509 fields the server derives, in the status's camelCase (CAs and TLS certificates). */
export function x509Status(remote: {
  subject_common_name: string;
  not_before: string;
  not_after: string;
  key_usages: string[];
  extended_key_usages: string[];
}) {
  return {
    subjectCommonName: remote.subject_common_name,
    notBefore: remote.not_before,
    notAfter: remote.not_after,
    keyUsages: remote.key_usages,
    extendedKeyUsages: remote.extended_key_usages,
  };
}
