import { z } from 'zod';
import { sshKeyTypes } from '../../../schemas/ssh-certificate-authorities.js';
import { MAX_PRINCIPALS } from '../../../schemas/ssh-certificates.js';
import { PUBLIC_KEY_MAX_BYTES } from '../../../schemas/ssh-credentials.js';
import { exactlyOne, immutable } from '../cel.js';
import { describedSpecFields, localRef, objectName, serverId, statusFields } from '../common.js';

/** What SSH host and user certificates share: the signing CA, the key, principals and validity. */

const SIGNED_ONCE = 'a certificate is signed once';
const timestamp = z.string().meta({ format: 'date-time' });
/** An RFC 3339 time in a spec (bounded, as every spec string is). */
export const specTimestamp = z.string().max(64).meta({ format: 'date-time' });

export const sshCertificateSpecFields = {
  ...describedSpecFields,
  sshCertificateAuthorityRef: localRef('SSHCertificateAuthority').optional(),
  sshCertificateAuthorityId: serverId('sshca', 'the SSH certificate authority that signs').optional(),
  publicKey: z
    .string()
    .min(1)
    .max(PUBLIC_KEY_MAX_BYTES)
    .meta({ description: 'the public key to certify, as an OpenSSH authorized_keys line; immutable' }),
  principals: z.array(z.string().min(1).max(255)).max(MAX_PRINCIPALS).optional().meta({
    description: 'names the certificate is valid for; empty means any',
    'x-kubernetes-list-type': 'set',
  }),
  validAfter: specTimestamp.optional().meta({ description: 'RFC 3339; default the time of signing' }),
  certificateSecretName: objectName.optional().meta({
    description:
      "Secret the signed certificate is written to (key 'certificate'); default '<name>-certificate'",
  }),
};

export const sshCertificateSpecRules = [
  exactlyOne('sshCertificateAuthorityRef', 'sshCertificateAuthorityId'),
  immutable('sshCertificateAuthorityRef', SIGNED_ONCE),
  immutable('sshCertificateAuthorityId', SIGNED_ONCE),
  immutable('publicKey', SIGNED_ONCE),
];

export const sshCertificateStatus = z.object({
  ...statusFields,
  keyType: z.enum(sshKeyTypes).optional().meta({ description: 'key type of the certified public key' }),
  validAfter: timestamp.optional(),
  validUntil: timestamp.optional(),
  certificateSecretName: objectName
    .optional()
    .meta({ description: 'the Secret holding the signed certificate' }),
});
export type SshCertificateStatus = z.output<typeof sshCertificateStatus>;
