import type { FastifyInstance } from 'fastify';
import {
  type Credential,
  credential,
  credentialCreate,
  credentialList,
  credentialUpdate,
} from '../../schemas/credentials.js';
import { hashToken, newSecretToken } from '../crypto/tokens.js';
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
import { resolveOwnerId } from './owner.js';

const TAG = 'Tunnel credentials';
const KIND = 'tunnel credential';
/** Prefix of authtokens, so a leaked one is recognisable in a secret scan. */
export const AUTHTOKEN_PREFIX = 'ewt';

/** ACLs are stored as JSON text; `[]` means no restrictions. */
export function storedAcl(json: string): string[] {
  return JSON.parse(json) as string[];
}

/** Columns a tunnel or SSH credential PATCH sets: the ACL is stored as JSON text. */
export function credentialChanges(body: { description?: string; metadata?: string; acl?: string[] }) {
  return {
    description: body.description,
    metadata: body.metadata,
    acl: body.acl === undefined ? undefined : JSON.stringify(body.acl),
  };
}

/** `token` is known only while answering the create; every other response says null. */
export function credentialToWire(
  row: Row<'credentials'>,
  ctx: RequestContext,
  token: string | null = null,
): Credential {
  return {
    ...describedToWire(row, ctx, '/credentials'),
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
    event: { resource: 'credential', action: 'created' },
    handler: async ({ body, ctx }) => {
      const token = newSecretToken(AUTHTOKEN_PREFIX);
      const row = {
        ...newDescribedRow('cr', body, ctx),
        owner_id: await resolveOwnerId(ctx, body.owner_id),
        acl: JSON.stringify(body.acl ?? []),
        token_hash: hashToken(token),
      };
      await insertRow(ctx.db, 'credentials', row);
      return credentialToWire(row, ctx, token);
    },
  });
  defineUpdateRoute(app, {
    table: 'credentials',
    eventResource: 'credential',
    ownerColumn: 'owner_id',
    path: '/credentials',
    kind: KIND,
    name: 'Credential',
    tag: TAG,
    summary: 'Update the description, metadata or ACL of a tunnel credential',
    body: credentialUpdate,
    item: credential,
    toChanges: credentialChanges,
    toWire: (row, ctx) => credentialToWire(row, ctx),
  });
  defineCollectionReads(app, {
    table: 'credentials',
    eventResource: 'credential',
    ownerColumn: 'owner_id',
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
