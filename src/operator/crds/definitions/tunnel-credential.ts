import { z } from 'zod';
import { withRules } from '../cel.js';
import { describedSpecFields, objectName, statusFields } from '../common.js';
import { defineKind } from '../crd-definition.js';
import { acl, ownerFields, ownerRules } from './credential-fields.js';

export const tunnelCredentialSpec = withRules(
  z.object({
    ...describedSpecFields,
    acl,
    ...ownerFields,
    tokenSecretName: objectName
      .optional()
      .meta({ description: "Secret the authtoken is written to (key 'token'); default '<name>-token'" }),
  }),
  ...ownerRules,
);
export type TunnelCredentialSpec = z.output<typeof tunnelCredentialSpec>;

export const tunnelCredentialStatus = z.object({
  ...statusFields,
  ownerId: z.string().optional().meta({ description: 'server id of the owning user or bot' }),
  tokenSecretName: objectName.optional().meta({ description: 'the Secret holding the authtoken' }),
});
export type TunnelCredentialStatus = z.output<typeof tunnelCredentialStatus>;

export const tunnelCredentialKind = defineKind({
  kind: 'TunnelCredential',
  plural: 'tunnelcredentials',
  shortNames: ['tuncred'],
  description:
    'TunnelCredential is an authtoken tunnel agents authenticate with; the operator writes the token, shown by the server only once, to a Secret.',
  spec: tunnelCredentialSpec,
  status: tunnelCredentialStatus,
  printerColumns: [{ name: 'Secret', type: 'string', jsonPath: '.status.tokenSecretName' }],
});
