import type { FastifyInstance } from 'fastify';
import { hashToken, newSecretToken } from '../../crypto/tokens.js';
import {
  type Credential,
  credential,
  credentialCreate,
  credentialList,
  credentialUpdate,
} from '../../schemas/credentials.js';
import type { RequestContext } from '../http/context.js';
import { insertRow, type Row } from '../store/rows.js';
import { defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineCollectionReads } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { describedToWire, newDescribedRow } from './described-row.js';
import { resolveOwnerId } from './owner.js';

const CREDENTIALS = defineCollection({
  table: 'credentials',
  path: '/credentials',
  kind: 'tunnel credential',
  name: 'Credential',
  plural: 'Credentials',
  tag: 'Tunnel credentials',
  eventResource: 'credential',
  listKey: 'credentials',
  item: credential,
  list: credentialList,
  toWire: (row, ctx) => credentialToWire(row, ctx),
  ownerColumn: 'owner_id',
});
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
    ...describedToWire(row, ctx, CREDENTIALS.path),
    token,
    acl: storedAcl(row.acl),
    owner_id: row.owner_id,
  };
}

export async function credentialRoutes(app: FastifyInstance): Promise<void> {
  // A retry with the same Idempotency-Key replays the create's response, token included (sealed at rest).
  defineCreateRoute(app, CREDENTIALS, {
    summary: 'Create a tunnel credential (authtoken); the token is returned only in this response',
    body: credentialCreate,
    handler: async ({ body, ctx }) => {
      const token = newSecretToken(AUTHTOKEN_PREFIX);
      const row = {
        ...newDescribedRow(CREDENTIALS.idPrefix, body, ctx),
        owner_id: await resolveOwnerId(ctx, body.owner_id),
        acl: JSON.stringify(body.acl ?? []),
        token_hash: hashToken(token),
      };
      await insertRow(ctx.db, CREDENTIALS.table, row);
      return credentialToWire(row, ctx, token);
    },
  });
  defineUpdateRoute(app, CREDENTIALS, {
    summary: 'Update the description, metadata or ACL of a tunnel credential',
    body: credentialUpdate,
    toChanges: credentialChanges,
  });
  defineCollectionReads(app, CREDENTIALS);
}
