import { z } from 'zod';
import { acl } from './acl.js';
import { describedInputFields, describedResourceFields, listOf } from './common.js';

/** `owner_id` of a credential create. Existence and the `usr_`/`bot_` kind are checked by the route. */
export const credentialOwnerId = z.string().min(1).meta({
  description: 'user or bot that owns the credential; default the caller; only admins may name another',
});

export const credential = z
  .object({
    ...describedResourceFields,
    token: z
      .string()
      .nullable()
      .meta({ description: 'the authtoken; present only in the response to creation, null elsewhere' }),
    acl: z.array(z.string()),
    owner_id: z.string(),
  })
  .meta({ id: 'TunnelCredential' });
export type Credential = z.infer<typeof credential>;

export const credentialCreate = z.strictObject({
  ...describedInputFields,
  acl: acl.optional(),
  owner_id: credentialOwnerId.optional(),
});
export type CredentialCreate = z.input<typeof credentialCreate>;
export const credentialUpdate = z.strictObject({
  ...describedInputFields,
  acl: acl.optional(),
});
export type CredentialUpdate = z.input<typeof credentialUpdate>;
export const credentialList = listOf('credentials', credential);
export type CredentialList = z.infer<typeof credentialList>;
