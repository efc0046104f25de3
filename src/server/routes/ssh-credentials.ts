import type { FastifyInstance } from 'fastify';
import { idParams } from '../../schemas/common.js';
import {
  type SshCredential,
  sshCredential,
  sshCredentialCreate,
  sshCredentialList,
  sshCredentialUpdate,
} from '../../schemas/ssh-credentials.js';
import { newId } from '../crypto/ids.js';
import { parseSshPublicKey, SshPublicKeyError } from '../crypto/ssh-public-key.js';
import { badRequest, conflict } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import { defineCollectionReads, insertRow, type Row, requireRow, updateRow } from './collection.js';
import { storedAcl } from './credentials.js';
import { resolveOwnerId } from './owner.js';

const TAG = 'SSH credentials';
const KIND = 'SSH credential';

export function sshCredentialToWire(row: Row<'ssh_credentials'>, ctx: RequestContext): SshCredential {
  return {
    id: row.id,
    uri: ctx.url(`/ssh_credentials/${row.id}`),
    created_at: row.created_at,
    description: row.description,
    metadata: row.metadata,
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
    handler: async ({ body, ctx }) => {
      const publicKey = body.public_key.trim();
      const fingerprint = fingerprintOf(publicKey);
      const ownerId = await resolveOwnerId(ctx, body.owner_id);
      // The fingerprint is of the key material, so the same key in another format is caught too.
      const existing = await ctx.db
        .selectFrom('ssh_credentials')
        .select('id')
        .where('fingerprint', '=', fingerprint)
        .executeTakeFirst();
      if (existing) {
        throw conflict(`public_key: this key is already registered as ssh credential ${existing.id}`);
      }
      const row = {
        id: newId('sshcr'),
        created_at: ctx.now(),
        description: body.description ?? '',
        metadata: body.metadata ?? '',
        owner_id: ownerId,
        acl: JSON.stringify(body.acl ?? []),
        public_key: publicKey,
        fingerprint,
      };
      await insertRow(ctx.db, 'ssh_credentials', row);
      return sshCredentialToWire(row, ctx);
    },
  });
  defineRoute(app, {
    method: 'PATCH',
    url: '/ssh_credentials/:id',
    operationId: 'updateSSHCredential',
    summary: 'Update the description, metadata or ACL of an SSH credential',
    tag: TAG,
    params: idParams,
    body: sshCredentialUpdate,
    status: 200,
    response: sshCredential,
    handler: async ({ params, body, ctx }) => {
      await requireRow(ctx.db, 'ssh_credentials', params.id, KIND);
      await updateRow(ctx.db, 'ssh_credentials', params.id, {
        description: body.description,
        metadata: body.metadata,
        acl: body.acl === undefined ? undefined : JSON.stringify(body.acl),
      });
      return sshCredentialToWire(await requireRow(ctx.db, 'ssh_credentials', params.id, KIND), ctx);
    },
  });
  defineCollectionReads(app, {
    table: 'ssh_credentials',
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
