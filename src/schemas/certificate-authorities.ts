import { z } from 'zod';
import { describedInputFields, describedResourceFields, listOf, timestamp } from './common.js';

/**
 * Uploaded certificate authorities (`ca_`), used by the mutual TLS module of edges to verify
 * client certificates. Every field after `ca_pem` is derived from the certificate at upload.
 *
 * `key_usages` names the KeyUsage bits in bit order: digital_signature, content_commitment
 * (nonRepudiation), key_encipherment, data_encipherment, key_agreement, cert_sign, crl_sign,
 * encipher_only, decipher_only. `extended_key_usages` lists purposes in certificate order as any,
 * server_auth, client_auth, code_signing, email_protection, ipsec_end_system, ipsec_tunnel,
 * ipsec_user, time_stamping, ocsp_signing, or the dotted OID of any other purpose.
 */
export const certificateAuthority = z
  .object({
    ...describedResourceFields,
    ca_pem: z.string().meta({
      description:
        'the PEM of the CA certificate, re-encoded from its DER (nothing else of the upload is kept)',
    }),
    subject_common_name: z.string().meta({ description: "the subject's common name; '' when absent" }),
    not_before: timestamp,
    not_after: timestamp,
    key_usages: z.array(z.string()).meta({ description: 'KeyUsage bits in snake_case, in bit order' }),
    extended_key_usages: z
      .array(z.string())
      .meta({ description: 'ExtendedKeyUsage purposes in snake_case; unknown purposes as dotted OIDs' }),
  })
  .meta({ id: 'CertificateAuthority' });
export type CertificateAuthority = z.infer<typeof certificateAuthority>;

export const certificateAuthorityCreate = z.strictObject({
  ...describedInputFields,
  ca_pem: z.string().meta({
    description: 'one PEM-encoded X.509 certificate whose basicConstraints mark it a CA',
    format: 'x509-ca-pem',
  }),
});
export type CertificateAuthorityCreate = z.input<typeof certificateAuthorityCreate>;

/** Only the description and metadata change; the certificate is immutable. */
export const certificateAuthorityUpdate = z.strictObject(describedInputFields);
export type CertificateAuthorityUpdate = z.input<typeof certificateAuthorityUpdate>;

export const certificateAuthorityList = listOf('certificate_authorities', certificateAuthority);
export type CertificateAuthorityList = z.infer<typeof certificateAuthorityList>;
