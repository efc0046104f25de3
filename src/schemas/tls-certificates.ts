import { z } from 'zod';
import { describedInputFields, describedResourceFields, listOf, timestamp } from './common.js';

/**
 * Uploaded TLS certificates (`cert_`): a chain, leaf first, and the leaf's private key. The key is
 * accepted at creation only, kept encrypted at rest and never returned. Every field after
 * `certificate_pem` is derived from the leaf at upload; subject attributes absent from the leaf
 * are '' (several values of one attribute are joined by ", "). `key_usages` and
 * `extended_key_usages` use the names documented on CertificateAuthority. `serial_number` is
 * lowercase hex without colons or sign-padding byte (`openssl x509 -serial`, lowercased).
 */
export const tlsPrivateKeyType = z.enum(['rsa', 'ecdsa', 'ed25519']);

export const tlsCertificateSubjectAlternativeNames = z
  .object({
    dns_names: z.array(z.string()).meta({ description: 'DNS names, wildcards included' }),
    ips: z.array(z.string()).meta({ description: 'IP addresses; IPv6 in RFC 5952 form' }),
  })
  .meta({ id: 'TLSCertificateSANs' });

export const tlsCertificate = z
  .object({
    ...describedResourceFields,
    certificate_pem: z.string().meta({
      description:
        'the PEM chain, leaf first, re-encoded from the DER of each certificate (nothing else of the upload is kept)',
    }),
    subject_common_name: z.string(),
    subject_alternative_names: tlsCertificateSubjectAlternativeNames,
    issued_at: timestamp.nullable().meta({ description: 'when issued automatically; null when uploaded' }),
    not_before: timestamp,
    not_after: timestamp,
    key_usages: z.array(z.string()),
    extended_key_usages: z.array(z.string()),
    private_key_type: tlsPrivateKeyType,
    issuer_common_name: z.string(),
    serial_number: z.string().meta({ description: 'lowercase hex, no colons' }),
    subject_organization: z.string(),
    subject_organizational_unit: z.string(),
    subject_locality: z.string(),
    subject_province: z.string(),
    subject_country: z.string(),
  })
  .meta({ id: 'TLSCertificate' });
export type TlsCertificate = z.infer<typeof tlsCertificate>;

export const tlsCertificateCreate = z.strictObject({
  ...describedInputFields,
  certificate_pem: z.string().meta({
    description: 'PEM-encoded certificates, leaf first, each issued by the next',
    format: 'x509-chain-pem',
  }),
  private_key_pem: z.string().meta({
    description: "the leaf's unencrypted private key (PEM: PKCS#8, PKCS#1 or SEC 1); write-only",
    format: 'private-key-pem',
  }),
});
export type TlsCertificateCreate = z.input<typeof tlsCertificateCreate>;

/** Only the description and metadata change; certificate and key are immutable. */
export const tlsCertificateUpdate = z.strictObject(describedInputFields);
export type TlsCertificateUpdate = z.input<typeof tlsCertificateUpdate>;

export const tlsCertificateList = listOf('tls_certificates', tlsCertificate);
export type TlsCertificateList = z.infer<typeof tlsCertificateList>;
