import { z } from 'zod';
import { withRules } from '../cel.js';
import { defineKind } from '../crd-definition.js';
import {
  specTimestamp,
  sshCertificateSpecFields,
  sshCertificateSpecRules,
  sshCertificateStatus,
} from './ssh-certificate-fields.js';

export const sshUserCertificateSpec = withRules(
  z.object({
    ...sshCertificateSpecFields,
    validUntil: specTimestamp.optional().meta({ description: 'RFC 3339; default 24 hours after signing' }),
    // The two critical options OpenSSH defines, as fields: a map would let unknown names through.
    criticalOptions: z
      .object({
        forceCommand: z
          .string()
          .min(1)
          .max(4096)
          .optional()
          .meta({ description: 'force-command: the only command the certificate may run' }),
        sourceAddress: z.string().min(1).max(4096).optional().meta({
          description: 'source-address: comma-separated IP addresses or CIDRs the key may be used from',
        }),
      })
      .optional()
      .meta({ description: 'OpenSSH critical options' }),
    extensions: z.record(z.string(), z.string().max(4096)).optional().meta({
      description:
        'extensions (permit-pty, permit-port-forwarding, ... or name@domain) -> value ("" for flags); default permit-pty and permit-user-rc; {} grants none',
      maxProperties: 64,
    }),
  }),
  ...sshCertificateSpecRules,
);
export type SshUserCertificateSpec = z.output<typeof sshUserCertificateSpec>;

export const sshUserCertificateStatus = sshCertificateStatus;
export type SshUserCertificateStatus = z.output<typeof sshUserCertificateStatus>;

export const sshUserCertificateKind = defineKind({
  kind: 'SSHUserCertificate',
  plural: 'sshusercertificates',
  shortNames: ['sucrt'],
  description:
    'SSHUserCertificate is an OpenSSH user certificate signed by an SSH certificate authority; the operator writes it to a Secret. Changing principals, validity, options or extensions signs a new certificate.',
  spec: sshUserCertificateSpec,
  status: sshUserCertificateStatus,
  printerColumns: [{ name: 'Valid Until', type: 'string', jsonPath: '.status.validUntil' }],
});
