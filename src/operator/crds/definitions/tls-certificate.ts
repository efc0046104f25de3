import { z } from 'zod';
import { tlsPrivateKeyType } from '../../../schemas/tls-certificates.js';
import { immutable, withRules } from '../cel.js';
import { describedSpecFields, objectName, secretKeyRef, statusFields } from '../common.js';
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
      .optional()
      .meta({
        description:
          'PEM-encoded certificates, leaf first, each issued by the next; immutable. With privateKeySecretRef, instead of secretRef',
      }),
    privateKeySecretRef: secretKeyRef.optional().meta({
      description:
        "the Secret key holding the leaf's unencrypted PEM private key; immutable. Goes with certificatePem",
    }),
    secretRef: z
      .object({
        name: objectName.meta({ description: 'name of the Secret in the same namespace' }),
      })
      .optional()
      .meta({
        description:
          "a kubernetes.io/tls Secret of the same namespace (keys tls.crt, the chain leaf first, and tls.key), e.g. cert-manager's: its certificate is uploaded, and replaced on the server whenever the Secret changes (a renewal). Instead of certificatePem and privateKeySecretRef",
      }),
  }),
  {
    rule: 'has(self.secretRef) != has(self.certificatePem)',
    message:
      'exactly one of secretRef (a kubernetes.io/tls Secret) or certificatePem (with privateKeySecretRef) must be set',
  },
  {
    rule: 'has(self.certificatePem) == has(self.privateKeySecretRef)',
    message: 'certificatePem and privateKeySecretRef go together (the key of the certificate given inline)',
    fieldPath: '.privateKeySecretRef',
    reason: 'FieldValueRequired',
  },
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
    'TLSCertificate is an uploaded certificate chain and its private key, for TLS termination at edges: given inline (certificatePem, privateKeySecretRef) or taken from a kubernetes.io/tls Secret (secretRef) and kept in step with it.',
  spec: tlsCertificateSpec,
  // Inline or from a Secret: both forms' fields are optional, and an empty spec is neither.
  specRequired: true,
  status: tlsCertificateStatus,
  printerColumns: [
    ...x509Columns,
    { name: 'Serial', type: 'string', jsonPath: '.status.serialNumber', priority: 1 },
  ],
});
