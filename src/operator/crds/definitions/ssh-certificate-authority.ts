import { z } from 'zod';
import { sshKeyTypes } from '../../../schemas/ssh-certificate-authorities.js';
import { immutable, withRules } from '../cel.js';
import { describedSpecFields, statusFields } from '../common.js';
import { defineKind } from '../crd-definition.js';

const KEY_PAIR_IS_FIXED = 'the key pair is generated once and certificates name its public key';

export const sshCertificateAuthoritySpec = withRules(
  z.object({
    ...describedSpecFields,
    keyType: z.enum(sshKeyTypes).default('ed25519').meta({
      description: 'type of the key pair the server generates: ed25519 (default), ecdsa or rsa; immutable',
    }),
    ellipticCurve: z
      .enum(['p256', 'p384', 'p521'])
      .optional()
      .meta({ description: 'NIST curve of an ecdsa key; default p256; immutable' }),
    keySize: z
      .literal([2048, 3072, 4096])
      .optional()
      .meta({ description: 'modulus size in bits of an rsa key; default 4096; immutable' }),
  }),
  {
    rule: "!has(self.ellipticCurve) || self.keyType == 'ecdsa'",
    message: 'ellipticCurve only applies when keyType is ecdsa',
    fieldPath: '.ellipticCurve',
  },
  {
    rule: "!has(self.keySize) || self.keyType == 'rsa'",
    message: 'keySize only applies when keyType is rsa',
    fieldPath: '.keySize',
  },
  immutable('keyType', KEY_PAIR_IS_FIXED),
  immutable('ellipticCurve', KEY_PAIR_IS_FIXED),
  immutable('keySize', KEY_PAIR_IS_FIXED),
);
export type SshCertificateAuthoritySpec = z.output<typeof sshCertificateAuthoritySpec>;

export const sshCertificateAuthorityStatus = z.object({
  ...statusFields,
  publicKey: z.string().optional().meta({
    description: 'the CA public key (authorized_keys line), for TrustedUserCAKeys or @cert-authority',
  }),
  keyType: z.enum(sshKeyTypes).optional(),
});
export type SshCertificateAuthorityStatus = z.output<typeof sshCertificateAuthorityStatus>;

export const sshCertificateAuthorityKind = defineKind({
  kind: 'SSHCertificateAuthority',
  plural: 'sshcertificateauthorities',
  shortNames: ['sshca'],
  description:
    'SSHCertificateAuthority is an SSH certificate authority whose key pair the server generates and keeps.',
  spec: sshCertificateAuthoritySpec,
  status: sshCertificateAuthorityStatus,
  printerColumns: [{ name: 'Key Type', type: 'string', jsonPath: '.spec.keyType' }],
});
