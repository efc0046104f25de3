import { z } from 'zod';
import { PUBLIC_KEY_MAX_BYTES } from '../../../schemas/ssh-credentials.js';
import { immutable, withRules } from '../cel.js';
import { describedSpecFields, statusFields } from '../common.js';
import { defineKind } from '../crd-definition.js';
import { acl, ownerFields, ownerRules } from './credential-fields.js';

export const sshCredentialSpec = withRules(
  z.object({
    ...describedSpecFields,
    acl,
    publicKey: z
      .string()
      .min(1)
      .max(PUBLIC_KEY_MAX_BYTES)
      .meta({ description: 'the SSH public key agents authenticate with (OpenSSH line or PEM); immutable' }),
    ...ownerFields,
  }),
  immutable('publicKey', 'create a new credential for a new key'),
  ...ownerRules,
);
export type SshCredentialSpec = z.output<typeof sshCredentialSpec>;

export const sshCredentialStatus = z.object({
  ...statusFields,
  ownerId: z.string().optional().meta({ description: 'server id of the owning user or bot' }),
});
export type SshCredentialStatus = z.output<typeof sshCredentialStatus>;

export const sshCredentialKind = defineKind({
  kind: 'SSHCredential',
  plural: 'sshcredentials',
  shortNames: ['sshcr'],
  description:
    'SSHCredential lets tunnel agents authenticate with an SSH key, optionally restricted by ACL bind rules.',
  spec: sshCredentialSpec,
  status: sshCredentialStatus,
  printerColumns: [{ name: 'Owner', type: 'string', jsonPath: '.status.ownerId', priority: 1 }],
});
