import { z } from 'zod';
import { describedInputFields, describedResourceFields, ifThen, listOf } from './common.js';

export const sshKeyTypes = ['ed25519', 'ecdsa', 'rsa'] as const;
export const sshKeyType = z.enum(sshKeyTypes);
export type SshKeyType = z.infer<typeof sshKeyType>;

export const sshEllipticCurve = z
  .enum(['p256', 'p384', 'p521'])
  .meta({ description: 'NIST curve of an ecdsa key; default p256' });
export const sshRsaKeySize = z
  .literal([2048, 3072, 4096])
  .meta({ description: 'modulus size in bits of an rsa key; default 4096' });

export const sshCertificateAuthority = z
  .object({
    ...describedResourceFields,
    public_key: z.string().meta({
      description:
        'the CA public key as an OpenSSH authorized_keys line, for TrustedUserCAKeys or @cert-authority',
    }),
    key_type: sshKeyType,
  })
  .meta({ id: 'SSHCertificateAuthority' });
export type SshCertificateAuthority = z.infer<typeof sshCertificateAuthority>;

export const sshCertificateAuthorityCreate = z
  .strictObject({
    ...describedInputFields,
    private_key_type: sshKeyType
      .optional()
      .meta({ description: 'type of the key pair the server generates; default ed25519' }),
    elliptic_curve: sshEllipticCurve.optional(),
    key_size: sshRsaKeySize.optional(),
  })
  .superRefine((body, ctx) => {
    const type = body.private_key_type ?? 'ed25519';
    // A size or curve for another key type is a mistake the caller should hear about, not a no-op.
    if (body.elliptic_curve !== undefined && type !== 'ecdsa') {
      ctx.addIssue({
        code: 'custom',
        path: ['elliptic_curve'],
        message: `only applies when private_key_type is ecdsa, not ${type}`,
      });
    }
    if (body.key_size !== undefined && type !== 'rsa') {
      ctx.addIssue({
        code: 'custom',
        path: ['key_size'],
        message: `only applies when private_key_type is rsa, not ${type}`,
      });
    }
  })
  .meta({
    allOf: [
      ifThen(
        { not: { properties: { private_key_type: { const: 'ecdsa' } }, required: ['private_key_type'] } },
        { properties: { elliptic_curve: false } },
      ),
      ifThen(
        { not: { properties: { private_key_type: { const: 'rsa' } }, required: ['private_key_type'] } },
        { properties: { key_size: false } },
      ),
    ],
  });
export type SshCertificateAuthorityCreate = z.input<typeof sshCertificateAuthorityCreate>;
// The key pair is fixed for the life of the CA: certificates already issued name its public key.
export const sshCertificateAuthorityUpdate = z.strictObject(describedInputFields);
export type SshCertificateAuthorityUpdate = z.input<typeof sshCertificateAuthorityUpdate>;
export const sshCertificateAuthorityList = listOf('ssh_certificate_authorities', sshCertificateAuthority);
export type SshCertificateAuthorityList = z.infer<typeof sshCertificateAuthorityList>;
