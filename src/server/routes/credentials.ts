import type { FastifyInstance } from 'fastify';
import { idParams } from '../../schemas/common.js';
import {
  type Credential,
  credential,
  credentialCreate,
  credentialList,
  credentialUpdate,
} from '../../schemas/credentials.js';
import { newId } from '../crypto/ids.js';
import { hashToken, newSecretToken } from '../crypto/tokens.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import { defineCollectionReads, insertRow, type Row, requireRow, updateRow } from './collection.js';
import { resolveOwnerId } from './owner.js';

const TAG = 'Tunnel credentials';
const KIND = 'tunnel credential';
/** Prefix of authtokens, so a leaked one is recognisable in a secret scan. */
export const AUTHTOKEN_PREFIX = 'ewt';

/** ACLs are stored as JSON text; `[]` means no restrictions. */
export function storedAcl(json: string): string[] {
  return JSON.parse(json) as string[];
}

/** `token` is known only while answering the create; every other response says null. */
export function credentialToWire(
  row: Row<'credentials'>,
  ctx: RequestContext,
  token: string | null = null,
): Credential {
  return {
    id: row.id,
    uri: ctx.url(`/credentials/${row.id}`),
    created_at: row.created_at,
    description: row.description,
    metadata: row.metadata,
    token,
    acl: storedAcl(row.acl),
    owner_id: row.owner_id,
  };
}

export async function credentialRoutes(app: FastifyInstance): Promise<void> {
  defineRoute(app, {
    method: 'POST',
    url: '/credentials',
    operationId: 'createCredential',
    summary: 'Create a tunnel credential (authtoken); the token is returned only in this response',
    tag: TAG,
    body: credentialCreate,
    status: 201,
    response: credential,
    // A retry with the same key replays this response, token included (sealed at rest).
    idempotent: true,
    handler: async ({ body, ctx }) => {
      const token = newSecretToken(AUTHTOKEN_PREFIX);
      const row = {
        id: newId('cr'),
        created_at: ctx.now(),
        description: body.description ?? '',
        metadata: body.metadata ?? '',
        owner_id: await resolveOwnerId(ctx, body.owner_id),
        acl: JSON.stringify(body.acl ?? []),
        token_hash: hashToken(token),
      };
      await insertRow(ctx.db, 'credentials', row);
      return credentialToWire(row, ctx, token);
    },
  });
  defineRoute(app, {
    method: 'PATCH',
    url: '/credentials/:id',
    operationId: 'updateCredential',
    summary: 'Update the description, metadata or ACL of a tunnel credential',
    tag: TAG,
    params: idParams,
    body: credentialUpdate,
    status: 200,
    response: credential,
    handler: async ({ params, body, ctx }) => {
      await requireRow(ctx.db, 'credentials', params.id, KIND);
      await updateRow(ctx.db, 'credentials', params.id, {
        description: body.description,
        metadata: body.metadata,
        acl: body.acl === undefined ? undefined : JSON.stringify(body.acl),
      });
      return credentialToWire(await requireRow(ctx.db, 'credentials', params.id, KIND), ctx);
    },
  });
  defineCollectionReads(app, {
    table: 'credentials',
    path: '/credentials',
    listKey: 'credentials',
    kind: KIND,
    name: 'Credential',
    plural: 'Credentials',
    tag: TAG,
    item: credential,
    list: credentialList,
    toWire: (row, ctx) => credentialToWire(row, ctx),
  });
}
