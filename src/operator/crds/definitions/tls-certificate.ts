import { z } from 'zod';
import { tlsPrivateKeyType } from '../../../schemas/tls-certificates.js';
import { immutable, withRules } from '../cel.js';
import { describedSpecFields, secretKeyRef, statusFields } from '../common.js';
import { defineKind } from '../crd-definition.js';
import { PEM_MAX_CHARS, x509Columns, x509StatusFields } from './certificate-fields.js';

const UPLOADED_ONCE = 'the server keeps a certificate as uploaded; create a new TLSCertificate to replace it';

export const tlsCertificateSpec = withRules(
  z.object({
    ...describedSpecFields,
    certificatePem: z
      .string()
      .min(1)
      .max(PEM_MAX_CHARS)
      .regex(/-----BEGIN CERTIFICATE-----/)
      .meta({ description: 'PEM-encoded certificates, leaf first, each issued by the next; immutable' }),
    privateKeySecretRef: secretKeyRef.meta({
      description: "the Secret key holding the leaf's unencrypted PEM private key; immutable",
    }),
  }),
  immutable('certificatePem', UPLOADED_ONCE),
  immutable('privateKeySecretRef', UPLOADED_ONCE),
);
export type TlsCertificateSpec = z.output<typeof tlsCertificateSpec>;

export const tlsCertificateStatus = z.object({
  ...statusFields,
  ...x509StatusFields,
  subjectAlternativeNames: z
    .object({ dnsNames: z.array(z.string()).optional(), ips: z.array(z.string()).optional() })
    .optional(),
  issuerCommonName: z.string().optional(),
  serialNumber: z.string().optional().meta({ description: 'lowercase hex, no colons' }),
  privateKeyType: tlsPrivateKeyType.optional(),
});
export type TlsCertificateStatus = z.output<typeof tlsCertificateStatus>;

export const tlsCertificateKind = defineKind({
  kind: 'TLSCertificate',
  plural: 'tlscertificates',
  shortNames: ['tlscert'],
  description:
    'TLSCertificate is an uploaded certificate chain and its private key, for TLS termination at edges.',
  spec: tlsCertificateSpec,
  status: tlsCertificateStatus,
  printerColumns: [...x509Columns],
});
