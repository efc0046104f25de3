import type { FastifyInstance } from 'fastify';
import { parseSshPublicKey, SshPublicKeyError } from '../../crypto/ssh-public-key.js';
import {
  type SshCredential,
  sshCredential,
  sshCredentialCreate,
  sshCredentialList,
  sshCredentialUpdate,
} from '../../schemas/ssh-credentials.js';
import { badRequest, conflict } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { insertRow, type Row } from '../store/rows.js';
import { defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineCollectionReads } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { credentialChanges, storedAcl } from './credentials.js';
import { describedToWire, newDescribedRow } from './described-row.js';
import { resolveOwnerId } from './owner.js';

const SSH_CREDENTIALS = defineCollection({
  table: 'ssh_credentials',
  path: '/ssh_credentials',
  kind: 'SSH credential',
  name: 'SSHCredential',
  plural: 'SSHCredentials',
  tag: 'SSH credentials',
  eventResource: 'ssh_credential',
  listKey: 'ssh_credentials',
  item: sshCredential,
  list: sshCredentialList,
  toWire: sshCredentialToWire,
  ownerColumn: 'owner_id',
});

export function sshCredentialToWire(row: Row<'ssh_credentials'>, ctx: RequestContext): SshCredential {
  return {
    ...describedToWire(row, ctx, SSH_CREDENTIALS.path),
    public_key: row.public_key,
    acl: storedAcl(row.acl),
    owner_id: row.owner_id,
  };
}

function fingerprintOf(publicKey: string): string {
  try {
    return parseSshPublicKey(publicKey).fingerprint;
  } catch (error) {
    if (error instanceof SshPublicKeyError) throw badRequest(`public_key: ${error.message}`);
    throw new Error('public_key: unexpected failure while parsing', { cause: error });
  }
}

export async function sshCredentialRoutes(app: FastifyInstance): Promise<void> {
  defineCreateRoute(app, SSH_CREDENTIALS, {
    summary: 'Register an SSH public key that tunnel agents authenticate with',
    body: sshCredentialCreate,
    handler: async ({ body, ctx }) => {
      const publicKey = body.public_key.trim();
      const fingerprint = fingerprintOf(publicKey);
      const ownerId = await resolveOwnerId(ctx, body.owner_id);
      // The fingerprint is of the key material, so the same key in another format is caught too.
      const existing = await ctx.db
        .selectFrom(SSH_CREDENTIALS.table)
        .select(['id', 'owner_id'])
        .where('fingerprint', '=', fingerprint)
        .executeTakeFirst();
      if (existing) {
        // Keys are unique account-wide, but a non-admin is not told the id of a credential it cannot see.
        const visible = ctx.principal.isAdmin || existing.owner_id === ctx.principal.id;
        throw conflict(
          visible
            ? `public_key: this key is already registered as ssh credential ${existing.id}`
            : 'public_key: this key is already registered by another owner',
        );
      }
      const row = {
        ...newDescribedRow(SSH_CREDENTIALS.idPrefix, body, ctx),
        owner_id: ownerId,
        acl: JSON.stringify(body.acl ?? []),
        public_key: publicKey,
        fingerprint,
      };
      await insertRow(ctx.db, SSH_CREDENTIALS.table, row);
      return sshCredentialToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, SSH_CREDENTIALS, {
    summary: 'Update the description, metadata or ACL of an SSH credential',
    body: sshCredentialUpdate,
    toChanges: credentialChanges,
  });
  defineCollectionReads(app, SSH_CREDENTIALS);
}
