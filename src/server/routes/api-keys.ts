import type { FastifyInstance } from 'fastify';
import { hashToken, newSecretToken } from '../../crypto/tokens.js';
import { type ApiKey, apiKey, apiKeyCreate, apiKeyList, apiKeyUpdate } from '../../schemas/api-keys.js';
import { inUse } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { API_KEY_PREFIX } from '../store/bootstrap.js';
import { insertRow, type Row } from '../store/rows.js';
import { defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineDeleteRoute, defineGetRoute, defineListRoute } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { describedToWire, newDescribedRow } from './described-row.js';
import { resolveOwnerId } from './owner.js';

/** Admins see every key, anyone else only their own: someone else's key is a 404 like an unknown id. */
export const API_KEYS = defineCollection({
  table: 'api_keys',
  path: '/api_keys',
  kind: 'API key',
  name: 'APIKey',
  plural: 'APIKeys',
  tag: 'API keys',
  eventResource: 'api_key',
  listKey: 'api_keys',
  item: apiKey,
  list: apiKeyList,
  toWire: (row, ctx) => apiKeyToWire(row, ctx),
  ownerColumn: 'owner_id',
});

/** `token` is the plain key: only the create response has it; the server keeps its hash alone. */
export function apiKeyToWire(row: Row<'api_keys'>, ctx: RequestContext, token: string | null = null): ApiKey {
  return {
    ...describedToWire(row, ctx, API_KEYS.path),
    owner_id: row.owner_id,
    token,
  };
}

export async function apiKeyRoutes(app: FastifyInstance): Promise<void> {
  defineCreateRoute(app, API_KEYS, {
    summary: 'Create an API key for the caller, or (admins only) for another user or bot',
    body: apiKeyCreate,
    handler: async ({ body, ctx }) => {
      // Same owner rules as credentials: admins may name any user or bot, others only themselves.
      const ownerId = await resolveOwnerId(ctx, body.owner_id);
      const token = newSecretToken(API_KEY_PREFIX);
      const row = {
        ...newDescribedRow(API_KEYS.idPrefix, body, ctx),
        owner_id: ownerId,
        token_hash: hashToken(token),
      };
      await insertRow(ctx.db, API_KEYS.table, row);
      return apiKeyToWire(row, ctx, token);
    },
  });
  // Route by route rather than defineCollectionReads: their own summaries, and PATCH between GET and
  // DELETE, as the OpenAPI document has always listed them.
  defineListRoute(app, API_KEYS, {
    summary: 'List API keys, newest first: all of them for admins, the caller’s own otherwise',
  });
  defineGetRoute(app, API_KEYS, { summary: 'Get an API key (its token is never shown again)' });
  defineUpdateRoute(app, API_KEYS, {
    summary: 'Update the description or metadata of an API key',
    body: apiKeyUpdate,
    toChanges: (body) => body,
  });
  defineDeleteRoute(app, API_KEYS, {
    summary: 'Revoke an API key: later requests with it get 401',
    beforeDelete: (row, ctx) => refuseLastAdminKey(ctx, row.owner_id),
  });
}

/** Deleting the admin's last key would lock the account out until a restart with EDGEWARD_ADMIN_API_KEY. */
async function refuseLastAdminKey(ctx: RequestContext, ownerId: string): Promise<void> {
  if (!ownerId.startsWith('usr_')) return;
  const { count } = await ctx.db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('owner_id', '=', ownerId)
    .executeTakeFirstOrThrow();
  if (Number(count) <= 1) {
    throw inUse(`id: this is the last API key of user ${ownerId}; create another key before deleting it`);
  }
}
