import { z } from 'zod';
import { immutable, withRules } from '../cel.js';
import { describedSpecFields, statusFields } from '../common.js';
import { defineKind } from '../crd-definition.js';
import { PEM_MAX_CHARS, x509Columns, x509StatusFields } from './certificate-fields.js';

export const certificateAuthoritySpec = withRules(
  z.object({
    ...describedSpecFields,
    caPem: z
      .string()
      .min(1)
      .max(PEM_MAX_CHARS)
      .regex(/-----BEGIN CERTIFICATE-----/)
      .meta({ description: 'the PEM of the CA certificate (public, so inline); immutable' }),
  }),
  immutable('caPem', 'create a new CertificateAuthority for a new certificate'),
);
export type CertificateAuthoritySpec = z.output<typeof certificateAuthoritySpec>;

export const certificateAuthorityStatus = z.object({ ...statusFields, ...x509StatusFields });
export type CertificateAuthorityStatus = z.output<typeof certificateAuthorityStatus>;

export const certificateAuthorityKind = defineKind({
  kind: 'CertificateAuthority',
  plural: 'certificateauthorities',
  shortNames: ['ca'],
  description:
    'CertificateAuthority is an uploaded CA certificate; mutual TLS modules verify client certificates with it.',
  spec: certificateAuthoritySpec,
  status: certificateAuthorityStatus,
  printerColumns: [...x509Columns],
});
