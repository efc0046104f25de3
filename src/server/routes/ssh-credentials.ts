import type { FastifyInstance } from 'fastify';
import {
  type SshCredential,
  sshCredential,
  sshCredentialCreate,
  sshCredentialList,
  sshCredentialUpdate,
} from '../../schemas/ssh-credentials.js';
import { parseSshPublicKey, SshPublicKeyError } from '../crypto/ssh-public-key.js';
import { badRequest, conflict } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import {
  defineCollectionReads,
  defineUpdateRoute,
  describedToWire,
  insertRow,
  newDescribedRow,
  type Row,
} from './collection.js';
import { credentialChanges, storedAcl } from './credentials.js';
import { resolveOwnerId } from './owner.js';

const TAG = 'SSH credentials';
const KIND = 'SSH credential';

export function sshCredentialToWire(row: Row<'ssh_credentials'>, ctx: RequestContext): SshCredential {
  return {
    ...describedToWire(row, ctx, '/ssh_credentials'),
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
  defineRoute(app, {
    method: 'POST',
    url: '/ssh_credentials',
    operationId: 'createSSHCredential',
    summary: 'Register an SSH public key that tunnel agents authenticate with',
    tag: TAG,
    body: sshCredentialCreate,
    status: 201,
    response: sshCredential,
    idempotent: true,
    event: { resource: 'ssh_credential', action: 'created' },
    handler: async ({ body, ctx }) => {
      const publicKey = body.public_key.trim();
      const fingerprint = fingerprintOf(publicKey);
      const ownerId = await resolveOwnerId(ctx, body.owner_id);
      // The fingerprint is of the key material, so the same key in another format is caught too.
      const existing = await ctx.db
        .selectFrom('ssh_credentials')
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
        ...newDescribedRow('sshcr', body, ctx),
        owner_id: ownerId,
        acl: JSON.stringify(body.acl ?? []),
        public_key: publicKey,
        fingerprint,
      };
      await insertRow(ctx.db, 'ssh_credentials', row);
      return sshCredentialToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, {
    table: 'ssh_credentials',
    eventResource: 'ssh_credential',
    ownerColumn: 'owner_id',
    path: '/ssh_credentials',
    kind: KIND,
    name: 'SSHCredential',
    tag: TAG,
    summary: 'Update the description, metadata or ACL of an SSH credential',
    body: sshCredentialUpdate,
    item: sshCredential,
    toChanges: credentialChanges,
    toWire: sshCredentialToWire,
  });
  defineCollectionReads(app, {
    table: 'ssh_credentials',
    eventResource: 'ssh_credential',
    ownerColumn: 'owner_id',
    path: '/ssh_credentials',
    listKey: 'ssh_credentials',
    kind: KIND,
    name: 'SSHCredential',
    plural: 'SSHCredentials',
    tag: TAG,
    item: sshCredential,
    list: sshCredentialList,
    toWire: sshCredentialToWire,
  });
}
