import { z } from 'zod';
import { withRules } from '../cel.js';
import { defineKind } from '../crd-definition.js';
import {
  specTimestamp,
  sshCertificateSpecFields,
  sshCertificateSpecRules,
  sshCertificateStatus,
} from './ssh-certificate-fields.js';

export const sshHostCertificateSpec = withRules(
  z.object({
    ...sshCertificateSpecFields,
    validUntil: specTimestamp.optional().meta({ description: 'RFC 3339; default one year after signing' }),
  }),
  ...sshCertificateSpecRules,
);
export type SshHostCertificateSpec = z.output<typeof sshHostCertificateSpec>;

export const sshHostCertificateStatus = sshCertificateStatus;
export type SshHostCertificateStatus = z.output<typeof sshHostCertificateStatus>;

export const sshHostCertificateKind = defineKind({
  kind: 'SSHHostCertificate',
  plural: 'sshhostcertificates',
  shortNames: ['shcrt'],
  description:
    'SSHHostCertificate is an OpenSSH host certificate signed by an SSH certificate authority; the operator writes it to a Secret. Changing principals or validity signs a new certificate.',
  spec: sshHostCertificateSpec,
  status: sshHostCertificateStatus,
  printerColumns: [{ name: 'Valid Until', type: 'string', jsonPath: '.status.validUntil' }],
});
