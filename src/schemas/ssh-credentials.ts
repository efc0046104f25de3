import { z } from 'zod';
import { acl } from './acl.js';
import { describedInputFields, describedResourceFields, listOf } from './common.js';
import { credentialOwnerId, credentialUpdate } from './credentials.js';

/**
 * The spec gives no limit for `public_key`; an RSA 16384-bit key in PEM is about 3 KB, so 16 KiB
 * holds every real public key and keeps abuse out. What makes a key acceptable is checked by the
 * route's parser, which needs more than a schema can say.
 */
export const PUBLIC_KEY_MAX_BYTES = 16384;

export const sshCredential = z
  .object({
    ...describedResourceFields,
    public_key: z.string(),
    acl: z.array(z.string()),
    owner_id: z.string(),
  })
  .meta({ id: 'SSHCredential' });
export type SshCredential = z.infer<typeof sshCredential>;

export const sshPublicKeyText = z
  .string()
  .refine((s) => s.trim().length > 0, 'is required')
  .refine(
    (s) => Buffer.byteLength(s, 'utf8') <= PUBLIC_KEY_MAX_BYTES,
    `must be at most ${PUBLIC_KEY_MAX_BYTES} bytes`,
  )
  .meta({
    format: 'ssh-public-key',
    description:
      'SSH public key: OpenSSH single-line form (ssh-ed25519, ssh-rsa >= 2048 bits, ecdsa-sha2-nistp256/384/521) or PEM (SPKI, PKCS#1, RFC 4716)',
  });

export const sshCredentialCreate = z.strictObject({
  ...describedInputFields,
  acl: acl.optional(),
  public_key: sshPublicKeyText,
  owner_id: credentialOwnerId.optional(),
});
export type SshCredentialCreate = z.input<typeof sshCredentialCreate>;
// The same fields as a tunnel credential PATCH: `public_key` is immutable, so a PATCH naming it is an
// unknown field.
export const sshCredentialUpdate = credentialUpdate;
export type SshCredentialUpdate = z.input<typeof sshCredentialUpdate>;
export const sshCredentialList = listOf('ssh_credentials', sshCredential);
export type SshCredentialList = z.infer<typeof sshCredentialList>;
